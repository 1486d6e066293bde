"""Process groups robot-to supervises, and how a whole group (and its descendants) dies.

Every command robot-to starts (the iteration's robot child, verify/measure/floor commands,
the bash tool) runs in its own process group. Killing one sends SIGTERM to the group and
to the groups of all its descendants, then SIGKILL to whatever is left after a grace
period, so nothing is orphaned.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
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


class Supervisor:
    """The groups alive right now, so a signal handler can kill them all at once."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # re-entered when a signal handler interrupts add()
        self._pids: set[int] = set()

    def add(self, pid: int) -> None:
        """Track a group leader."""
        with self._lock:
            self._pids.add(pid)

    def discard(self, pid: int) -> None:
        """Stop tracking a group leader."""
        with self._lock:
            self._pids.discard(pid)

    def kill_all(self, grace: float = GRACE_SECONDS) -> None:
        """Kill every tracked group (and descendants)."""
        with self._lock:
            pids = list(self._pids)
        for pid in pids:
            kill_tree(pid, grace)
