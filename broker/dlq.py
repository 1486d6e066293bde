"""The dead-letter queue: messages that could not be delivered, kept for listing and replay."""

from __future__ import annotations

import itertools
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("robotlab.broker")


@dataclass(frozen=True)
class DeadLetter:
    """A message the broker gave up on, with why."""

    dlq_id: str
    reason: str
    detail: str
    header: dict[str, Any]
    body: bytes
    at: float

    def describe(self) -> dict[str, Any]:
        """Plain data for ``robotlab dlq list``; the body stays msgpack for the client to decode."""
        return {
            "dlq_id": self.dlq_id,
            "reason": self.reason,
            "detail": self.detail,
            "id": self.header.get("id"),
            "to": self.header.get("to"),
            "from": self.header.get("from"),
            "type": self.header.get("type"),
            "at": self.at,
            "body": self.body,
        }


class DeadLetterQueue:
    """Bounded, ordered dead letters; eviction of the oldest is counted, never silent."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.evicted = 0
        self._entries: OrderedDict[str, DeadLetter] = OrderedDict()
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, reason: str, detail: str, header: dict[str, Any], body: bytes) -> DeadLetter:
        """Record a dead letter and return it."""
        letter = DeadLetter(f"dl-{next(self._ids)}", reason, detail, dict(header), body, time.time())
        self._entries[letter.dlq_id] = letter
        log.info("dead letter %s: %s %s from %s to %s (%s)", letter.dlq_id, header.get("type", "message"),
                 header.get("id"), header.get("from"), header.get("to"), f"{reason}: {detail}" if detail else reason)
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)
            self.evicted += 1
        return letter

    def list(self) -> list[DeadLetter]:
        """All dead letters, oldest first."""
        return list(self._entries.values())

    def take(self, dlq_id: str) -> DeadLetter | None:
        """Remove and return one dead letter (for replay)."""
        return self._entries.pop(dlq_id, None)

    def purge(self, dlq_id: str | None = None) -> int:
        """Remove one dead letter, or all of them; return how many went."""
        if dlq_id is None:
            count = len(self._entries)
            self._entries.clear()
            return count
        return 1 if self._entries.pop(dlq_id, None) is not None else 0
