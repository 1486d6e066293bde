"""The messages flowing through the broker, for those who watch (``robotlab web``, ``robotlab
traffic``): the latest SENDs as who sent what type to whom and how big, never their contents.

A ring of the last :data:`KEPT`, so watching costs bounded memory and one append a message. A
watcher asks for what came after the last one it saw (the ``traffic`` admin op) and is told how
many it did not get: the ring moved on, or it asked for fewer. That is the throttle.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

KEPT = 500
"""Messages the ring keeps."""


Row = tuple[int, float, Any, Any, Any, int, Any]
"""(seq, at, from, to, type, bytes, untracked): a tuple on the hot path, a dict when asked."""


class Traffic:
    """The last :data:`KEPT` messages routed, each numbered in the order the broker read it."""

    def __init__(self, kept: int = KEPT) -> None:
        self._ring: deque[Row] = deque(maxlen=kept)
        self.count = 0
        """How many messages the broker has read since it started."""

    def seen(self, header: dict[str, Any], size: int) -> None:
        """Note one SEND, already stamped with its sender (one tuple: it is on every message's
        way through the broker)."""
        self.count += 1
        # header.get straight (compiled, a dict's get), not a bound method called four times
        self._ring.append((self.count, time.time(), header.get("from"), header.get("to"),
                           header.get("type"), size, header.get("untracked")))

    def after(self, seq: int, limit: int) -> dict[str, Any]:
        """The newest ``limit`` messages numbered after ``seq``, oldest first, with ``last`` (the
        number to ask after next time) and ``skipped`` (those after ``seq`` not in the answer)."""
        newer = [row for row in self._ring if row[0] > seq] if limit > 0 else []
        shown = [_as_dict(row) for row in newer[-limit:]] if limit > 0 else []
        return {"messages": shown, "last": self.count,
                "skipped": max(0, self.count - max(seq, 0) - len(shown))}


def _as_dict(row: Row) -> dict[str, Any]:
    seq, at, sender, to, type_, size, untracked = row
    return {"seq": seq, "at": round(at, 3), "from": sender, "to": to, "type": type_,
            "bytes": size, "reply": bool(untracked)}
