"""The messages flowing, as the console shows them: the broker's ``traffic`` admin op, read after
the last message already seen, at most :data:`SHOWN` kept (newest first), the rest only counted.

The page is throttled twice: one look an interval (``--interval``), and a look brings at most
:data:`SHOWN` messages, however many flowed. Only who, to whom, what type and how big: the
broker's ring holds no contents.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Final

from robotlab.bus import BusClient

SHOWN: Final = 30
"""Messages the page shows."""


class Flow:
    """The latest messages the broker routed, as one console has seen them."""

    def __init__(self) -> None:
        self._rows: deque[dict[str, Any]] = deque(maxlen=SHOWN)
        self._last = 0
        self._lock = threading.Lock()  # the watcher and /api/view look from worker threads

    def look(self, client: BusClient) -> dict[str, Any]:
        """Ask the broker for what flowed since the last look.

        Returns ``{"messages": [...], "routed": N}``: the newest messages first, and how many
        the broker has read since it started (a broker that restarted counts from 0 again).
        """
        with self._lock:
            answer = client.admin("traffic", after=self._last, limit=SHOWN)
            if answer["last"] < self._last:  # a broker restarted (or a standby took over)
                self._rows.clear()
                answer = client.admin("traffic", after=0, limit=SHOWN)
            self._rows.extendleft(answer["messages"])
            self._last = answer["last"]
            return {"messages": list(self._rows), "routed": answer["last"]}
