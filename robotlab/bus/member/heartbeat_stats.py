"""What a member reports of itself for ``robotlab ps`` and ``top``: a small map in its HEARTBEAT.

Set ``client.stats.source`` to a function returning plain values (tokens, dollars, a short
status; at most :data:`MAX_KEYS` of them). The client's I/O thread calls it at most once a
heartbeat, so it must be quick and safe to call from another thread. Every heartbeat carries
the map, and a busy member, which sends no idle heartbeats, sends one as soon as it changes.
The broker keeps the last map with the member's presence and bounds what it keeps
(``robotlab.broker.member_stats``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAX_KEYS = 16
"""Most entries of the map (the HEARTBEAT header schema's bound)."""


class StatsReport:
    """The member's stats source and what was last sent of it."""

    def __init__(self) -> None:
        self.source: Callable[[], dict[str, Any]] | None = None
        """Returns the current figures; None: this member reports none."""
        self.interval = 1.0
        """Seconds between two reports of changed figures (the link sets its heartbeat)."""
        self._sent: dict[str, Any] | None = None
        self._read: dict[str, Any] | None = None
        self._next = 0.0

    def changed(self, now: float) -> bool:
        """True when the figures differ from the last ones sent and a report is due."""
        if self.source is None or now < self._next:
            return False
        self._read = self._values()
        changed = self._read != self._sent
        if not changed:
            self._next = now + self.interval
        return changed

    def header(self, now: float) -> dict[str, Any]:
        """The HEARTBEAT header to send now: ``{"stats": {...}}``, or ``{}`` without a source."""
        if self.source is None:
            return {}
        values = self._read if self._read is not None else self._values()
        self._sent, self._read, self._next = values, None, now + self.interval
        return {"stats": values}

    def _values(self) -> dict[str, Any]:
        assert self.source is not None
        try:
            values = self.source()
        except Exception as exc:  # a failing source costs its report, never the I/O thread
            return {"status": f"stats failed: {type(exc).__name__}"}
        return dict(list(values.items())[:MAX_KEYS])
