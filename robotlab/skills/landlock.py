"""Landlock (Linux 5.13+) through its three system calls: restrict this process, then exec.

Run as ``python -I -S robotlab/skills/landlock.py '<rules json>' program args...``: the rules are
``{"read": [...], "write": [...], "network": bool}``. Landlock domains are inherited across
``execve`` and cannot be lifted, so the program and all it starts stay confined. Paths that do
not exist are skipped. With ``network`` false and ABI 4 or later, TCP bind and connect are
refused; other socket families are not covered by Landlock.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys

__all__ = ["NET_ABI", "abi_version", "restrict"]

# The syscall numbers are the same on every architecture (the generic table, Linux 5.13).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
NET_ABI = 4
"""The first Landlock ABI that can refuse TCP bind and connect."""

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_READ = _EXECUTE | _READ_FILE | _READ_DIR
# Every file-system right each ABI knows; all of them are handled, so unlisted means denied.
_FS_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_FILE_ONLY = _EXECUTE | _WRITE_FILE | _READ_FILE | (1 << 14) | (1 << 15)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is not available."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _check(result: int, what: str) -> int:
    if result < 0:
        raise OSError(ctypes.get_errno(), f"landlock {what}: {os.strerror(ctypes.get_errno())}")
    return result


def _add_path(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            access &= _FILE_ONLY
        rule = ctypes.create_string_buffer(struct.pack("=Qi", access, fd))
        _check(libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0), f"add rule for {path}")
    finally:
        os.close(fd)


def restrict(read: list[str], write: list[str], network: bool) -> None:
    """Confine this process (and what it executes) to the given paths and network setting.

    Raises:
        OSError: Landlock is not available or refused the rules.
    """
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available on this kernel")
    libc = _libc()
    fs_rights = _FS_RIGHTS[min(abi, 5)]
    net_rights = 0 if network or abi < NET_ABI else _NET_BIND_TCP | _NET_CONNECT_TCP
    attr = struct.pack("=QQ", fs_rights, net_rights) if abi >= NET_ABI else struct.pack("=Q", fs_rights)
    buffer = ctypes.create_string_buffer(attr)
    ruleset = _check(libc.syscall(_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)), 0), "create ruleset")
    try:
        for path in read:
            _add_path(libc, ruleset, path, _READ & fs_rights)
        for path in write:
            _add_path(libc, ruleset, path, fs_rights)
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(libc.syscall(_RESTRICT_SELF, ruleset, 0), "restrict self")
    finally:
        os.close(ruleset)


def main(argv: list[str]) -> None:
    """Apply the rules in ``argv[0]`` (JSON), then exec ``argv[1:]``."""
    if len(argv) < 2:
        sys.exit("usage: python -I landlock.py '<rules json>' program [args...]")
    rules = json.loads(argv[0])
    program = _resolve(argv[1])  # before restricting: the PATH lookup imports modules
    try:
        restrict(list(rules["read"]), list(rules["write"]), bool(rules["network"]))
    except OSError as exc:
        sys.exit(f"sandbox: {exc}; the script was not run")
    os.execv(program, argv[1:])


def _resolve(name: str) -> str:
    if os.sep in name:
        return name
    for folder in os.get_exec_path():
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return name


if __name__ == "__main__":
    main(sys.argv[1:])
