"""The process groups alive right now, so a signal handler can kill them all at once."""

from __future__ import annotations

import threading

from robotlab.process_groups.kill import GRACE_SECONDS, kill_tree


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
