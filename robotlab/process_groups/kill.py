"""How a process group, and the groups of all its descendants, dies: SIGTERM, then SIGKILL.

A command started with ``start_new_session=True`` leads its own group, but what it starts may
lead groups of their own (a shell's ``setsid``, a test runner's workers). Killing only the
leader's group would orphan those, so every descendant's group is signalled too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import psutil

GRACE_SECONDS = 2.0


def _tree(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    return []


def _groups(procs: list[psutil.Process]) -> set[int]:
    groups: set[int] = set()
    for proc in procs:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(proc.pid))
    return groups


def _signal_groups(groups: set[int], signum: int) -> None:
    own = os.getpgrp()
    for group in groups - {own}:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signum)


def _is_live(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def kill_tree(pid: int, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the process group of ``pid`` and of every descendant; SIGKILL after ``grace``."""
    procs = _tree(pid)
    groups = _groups(procs) | {pid}
    _signal_groups(groups, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_is_live(proc) for proc in procs):
        time.sleep(0.02)
    _signal_groups(groups | _groups(_tree(pid)), signal.SIGKILL)
