"""Run a skill script confined to its grant: bubblewrap, else Landlock, else refuse.

``sandbox.enabled: false`` (the default) runs scripts unconfined, as the Ruby gem does, but
still under the time-out. Enabled, the strategy is the first that works on this machine:

- **bubblewrap** (``bwrap``): a fresh mount namespace holding only the system directories,
  the skill's own directory and the granted paths (writable ones bound read-write), fresh
  PID/IPC/UTS namespaces, and a network namespace with nothing in it unless the grant allows
  the network, plus, with the network off, the seccomp socket filter of ``landlock.py`` (a
  Unix socket in a granted path is otherwise reachable from any namespace). It needs
  unprivileged user namespaces (or root).
- **Landlock** (Linux 5.13+): the kernel refuses file access outside the granted paths;
  with the network off, a seccomp filter makes ``socket()`` fail for every family (TCP, UDP,
  Unix, netlink, raw), and Landlock ABI 4 (Linux 6.7) refuses TCP bind and connect as well.
  Without seccomp, network-off scripts are refused rather than run with TCP rules alone.
- nothing: ``sandbox.enabled: true`` then refuses to run the script (``SandboxUnavailable``)
  instead of running it unconfined.

Every script runs in its own process group; on time-out the group and every descendant's
group get SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from robotlab.errors import SandboxUnavailable
from robotlab.process_groups import kill_tree
from robotlab.skills import landlock
from robotlab.skills.capabilities import Capabilities

__all__ = ["STRATEGIES", "SYSTEM_PATHS", "ScriptRun", "choose_strategy", "run_script"]

STRATEGIES = ("auto", "bubblewrap", "landlock")
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc/ld.so.cache",
                "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/passwd",
                "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf",
                "/etc/localtime", "/etc/ssl", "/etc/ca-certificates")
"""Read-only in every sandbox, so ``bash`` and ordinary tools can start. Only these files of
``/etc``: never ``/etc/shadow``, SSH host keys or other secrets kept there."""
# A fixed, minimal environment: a script never sees the robot's API keys or $HOME.
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent"}


@dataclass(frozen=True)
class ScriptRun:
    """What a script did: combined output, exit status, and whether it was killed."""

    output: str
    status: int | None
    timed_out: bool = False


@functools.cache
def bubblewrap_works() -> bool:
    """True when ``bwrap`` is installed and can make namespaces here."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-all", "true"],
                           capture_output=True, timeout=10, check=False)
    return probe.returncode == 0


def _unavailable(grant: Capabilities, abi: int) -> str | None:
    if abi < 1:
        return "neither bubblewrap nor Landlock can confine skill scripts on this machine"
    if not grant.network and not landlock.seccomp_supported():
        # Landlock alone refuses TCP only (and only from ABI 4): never claim network off with it.
        return ("Landlock cannot turn the network off without a seccomp filter, which this "
                "machine lacks")
    return None


def choose_strategy(enabled: bool, strategy: str, grant: Capabilities) -> str:
    """``none``, ``bubblewrap`` or ``landlock``: how this script will be confined.

    Raises:
        ConfigError: ``strategy`` is not one of ``STRATEGIES``.
        SandboxUnavailable: the sandbox is enabled and nothing here can enforce the grant.
    """
    if strategy not in STRATEGIES:
        raise SandboxUnavailable(f"unknown sandbox.strategy {strategy!r}; "
                                 f"use one of {', '.join(STRATEGIES)}")
    if not enabled or grant.trust == "core":
        return "none"
    if strategy in ("auto", "bubblewrap") and bubblewrap_works():
        return "bubblewrap"
    if strategy == "bubblewrap":
        raise SandboxUnavailable("sandbox.strategy is bubblewrap but bwrap cannot run here: "
                                 "install bubblewrap (apt-get install bubblewrap) or use "
                                 "strategy auto")
    reason = _unavailable(grant, landlock.abi_version())
    if reason:
        raise SandboxUnavailable(f"sandbox.enabled is true but {reason}: install bubblewrap "
                                 "(apt-get install bubblewrap) or set sandbox.enabled: false; "
                                 "the script was not run")
    return "landlock"


def _bind(flag: str, path: str) -> list[str]:
    source = Path(path)
    if source.is_symlink() and flag == "--ro-bind":
        return ["--symlink", str(source.readlink()), path]
    return [flag, path, path] if source.exists() else []


def bubblewrap_argv(argv: list[str], grant: Capabilities, skill_dir: Path, cwd: Path,
                    seccomp_fd: int | None = None) -> list[str]:
    """The ``bwrap`` command line that confines ``argv`` to ``grant``.

    ``seccomp_fd`` holds the socket filter.
    """
    out = ["bwrap", "--unshare-all", "--die-with-parent", "--clearenv"]
    if grant.network:
        out += ["--share-net"]
    elif seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    for name, value in _ENV.items():
        out += ["--setenv", name, value]
    for path in SYSTEM_PATHS:
        out += _bind("--ro-bind", path)
    out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in (str(skill_dir), *grant.fs_read):
        out += _bind("--ro-bind", path)
    for path in grant.fs_write:
        out += _bind("--bind", path)
    readable = [Path(p) for p in (str(skill_dir), *grant.fs_read, *grant.fs_write)]
    inside = any(cwd == p or cwd.is_relative_to(p) for p in readable)
    return [*out, "--chdir", str(cwd if inside else skill_dir), *argv]


def landlock_argv(argv: list[str], grant: Capabilities, skill_dir: Path) -> list[str]:
    """The command line that applies Landlock in a fresh interpreter, then execs ``argv``."""
    # Only the harmless devices: "/dev" whole would let a script running as root read disks.
    devices = ["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"]
    rules = {"read": [*SYSTEM_PATHS, *devices, str(skill_dir), *grant.fs_read],
             "write": [*grant.fs_write, "/dev/null"], "network": grant.network}
    # Run the file itself, isolated and without site (-I -S): it needs only the standard
    # library, so the launcher starts in tens of milliseconds instead of importing robotlab
    # (site alone, with the venv's .pth files, costs over 100 ms here).
    return [sys.executable, "-I", "-S", landlock.__file__, json.dumps(rules), *argv]


def _filter_pipe() -> int | None:
    """A pipe's read end holding the socket filter for ``bwrap --seccomp``.

    None without seccomp.
    """
    if not landlock.seccomp_supported():
        return None
    code = landlock.socket_filter()
    read_end, write_end = os.pipe()
    os.write(write_end, code)  # far below a pipe's buffer: never blocks
    os.close(write_end)
    return read_end


def run_script(argv: list[str], grant: Capabilities, strategy: str, skill_dir: Path,
               cwd: Path | None = None) -> ScriptRun:
    """Run ``argv`` under ``strategy`` with ``grant``'s time-out; stdin closed, own group."""
    cwd = (cwd or Path.cwd()).resolve()
    env: dict[str, str] | None = dict(_ENV)
    filter_fd = _filter_pipe() if strategy == "bubblewrap" and not grant.network else None
    if strategy == "bubblewrap":
        argv, env = bubblewrap_argv(argv, grant, skill_dir, cwd, filter_fd), None
    elif strategy == "landlock":
        argv = landlock_argv(argv, grant, skill_dir)
    elif strategy == "none":
        env = None
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, text=True, errors="replace",
                                pass_fds=() if filter_fd is None else (filter_fd,))
    finally:
        if filter_fd is not None:
            os.close(filter_fd)
    try:
        output, _ = proc.communicate(timeout=grant.timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid, grace=0.5)
        output, _ = proc.communicate()
        return ScriptRun(output or "", proc.returncode, timed_out=True)
    return ScriptRun(output or "", proc.returncode)
