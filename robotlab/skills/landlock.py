"""Landlock (Linux 5.13+) and a seccomp socket filter: restrict this process, then exec.

Run as ``python -I -S robotlab/skills/landlock.py '<rules json>' program args...``: the rules are
``{"read": [...], "write": [...], "network": bool}``. Landlock domains and seccomp filters are
inherited across ``execve`` and cannot be lifted, so the program and all it starts stay
confined. Paths that do not exist are skipped.

With ``network`` false, Landlock (ABI 4 or later) refuses TCP bind and connect, but its net
rules cover TCP only: UDP, Unix, netlink and raw sockets stay open. So a seccomp filter (a
classic BPF program, installed with ``prctl``) makes ``socket()`` fail with EACCES for every
family, and ``io_uring_setup`` (whose requests can open sockets past the filter) fail with
EPERM. ``socketpair()`` stays: its two ends reach nothing outside, and asyncio, multiprocessing
and shell pipelines need it. System calls of another ABI (32-bit or x32 on x86-64) are refused
too, so they cannot go round the filter. bubblewrap is handed the same filter (``--seccomp``)
for network-off scripts: its empty network namespace already cuts them off from the network,
but a Unix socket inside a granted path is reachable across namespaces. The file stays
standard-library only (it runs with ``-I -S``), which is why the filter is written here rather
than taken from libseccomp.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import struct
import sys

__all__ = ["NET_ABI", "abi_version", "deny_sockets", "restrict", "seccomp_supported",
           "socket_filter"]

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
_FS_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1,
              5: (1 << 16) - 1}
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_FILE_ONLY = _EXECUTE | _WRITE_FILE | _READ_FILE | (1 << 14) | (1 << 15)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is not available."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0),
                              ctypes.c_uint32(_CREATE_RULESET_VERSION))
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
        _check(libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0),
               f"add rule for {path}")
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
    attr = (struct.pack("=QQ", fs_rights, net_rights) if abi >= NET_ABI
            else struct.pack("=Q", fs_rights))
    buffer = ctypes.create_string_buffer(attr)
    ruleset = _check(libc.syscall(_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)), 0),
                     "create ruleset")
    try:
        for path in read:
            _add_path(libc, ruleset, path, _READ & fs_rights)
        for path in write:
            _add_path(libc, ruleset, path, fs_rights)
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(libc.syscall(_RESTRICT_SELF, ruleset, 0), "restrict self")
    finally:
        os.close(ruleset)


# Per machine: the audit arch seccomp reports, socket's and io_uring_setup's numbers, and
# whether numbers with the x32 bit exist (only x86-64 has a second ABI behind one arch value).
_ARCHES = {"x86_64": (0xC000003E, 41, 425, True), "aarch64": (0xC00000B7, 198, 425, False)}
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_LD_ABS_W, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_EACCES, _EPERM = 13, 1
_X32_BIT = 0x40000000


def seccomp_supported() -> bool:
    """True when this kernel filters system calls with seccomp and the machine is one we know."""
    if not sys.platform.startswith("linux") or platform.machine() not in _ARCHES:
        return False
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            return any(line.startswith("Seccomp:") for line in status)
    except OSError:
        return False


def _socket_filter(arch: int, socket_nr: int, io_uring_nr: int,
                   x32: bool) -> list[tuple[int, int, int, int]]:
    """The BPF program: (code, jump-if-true, jump-if-false, k) per instruction."""
    deny_socket, deny_other = (_RET, 0, 0, _ERRNO | _EACCES), (_RET, 0, 0, _ERRNO | _EPERM)
    tail = [(_JEQ, 2, 0, socket_nr), (_JEQ, 2, 0, io_uring_nr), (_RET, 0, 0, _ALLOW), deny_socket,
            deny_other]
    head = [(_LD_ABS_W, 0, 0, 4), (_JEQ, 1, 0, arch), (_RET, 0, 0, _KILL_PROCESS),
            (_LD_ABS_W, 0, 0, 0)]
    if x32:  # an x32 number would not equal socket's; refuse the whole ABI
        head.append((_JGE, len(tail) - 1, 0, _X32_BIT))
    return head + tail


def socket_filter() -> bytes:
    """The socket filter as the kernel (and ``bwrap --seccomp``) takes it: ``struct sock_filter[]``.

    Raises:
        OSError: no filter is written for this machine.
    """
    if platform.machine() not in _ARCHES:
        raise OSError(f"no seccomp socket filter is written for {platform.machine()}")
    program = _socket_filter(*_ARCHES[platform.machine()])
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def deny_sockets() -> None:
    """Install the socket filter on this process (no_new_privs must already be set).

    Raises:
        OSError: the kernel or the machine cannot filter system calls.
    """
    code = socket_filter()
    filters = ctypes.create_string_buffer(code)
    # native layout: the pointer is aligned
    fprog = struct.pack("@HP", len(code) // 8, ctypes.addressof(filters))
    buffer = ctypes.create_string_buffer(fprog)
    _check(_libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, buffer, 0, 0), "seccomp filter")


def main(argv: list[str]) -> None:
    """Apply the rules in ``argv[0]`` (JSON), then exec ``argv[1:]``."""
    if len(argv) < 2:
        sys.exit("usage: python -I landlock.py '<rules json>' program [args...]")
    rules = json.loads(argv[0])
    program = _resolve(argv[1])  # before restricting: the PATH lookup imports modules
    try:
        restrict(list(rules["read"]), list(rules["write"]), bool(rules["network"]))
        if not rules["network"]:
            deny_sockets()
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
