"""Process supervision for spawned robots: notice when a given process is gone.

A spawned robotd watches the process that spawned it and stops when that process exits, by
any means (kill -9 included). On Linux a pidfd makes the wait exact and free of pid reuse;
elsewhere psutil is polled every 0.2 s. The fork server also asks the kernel for a signal
when its parent dies (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import threading
from collections.abc import Callable

log = logging.getLogger("robotlab.robotd")

POLL_SECONDS = 0.2
_PR_SET_PDEATHSIG = 1


def open_pidfd(pid: int) -> int | None:
    """A pidfd for ``pid`` (readable once it exits), or None where unsupported or already gone."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def watch_process(pid: int, on_gone: Callable[[], None]) -> threading.Thread:
    """Call ``on_gone()`` on a daemon thread once process ``pid`` has exited."""
    thread = threading.Thread(target=_watch, args=(pid, on_gone), name=f"robotlab-watch-{pid}",
                              daemon=True)
    thread.start()
    return thread


def _watch(pid: int, on_gone: Callable[[], None]) -> None:
    pidfd = open_pidfd(pid)
    if pidfd is not None:
        try:
            select.select([pidfd], [], [])
        finally:
            os.close(pidfd)
    else:
        stop = threading.Event()
        while process_alive(pid) and not stop.wait(POLL_SECONDS):
            pass
    log.info("process %d is gone", pid)
    on_gone()


def die_with_parent(signum: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``signum`` when the parent exits (Linux only); True if it took.

    The kernel ties this to the parent *thread* that forked us, so callers use it only when
    the parent started us from its main thread; a pidfd watch covers the rest.
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes.util  # here: it imports subprocess, and only the fork server asks

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0
