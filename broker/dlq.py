"""The dead-letter queue: messages that could not be delivered, kept for listing and replay.

With a journal every change is also written there (in the broker's next commit), so the queue
survives a restart; without one it lives in memory only.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from robotlab.bus.wire.protocol import Body, Status

from .journal import NoJournal

log = logging.getLogger("robotlab.broker")


@dataclass(frozen=True)
class DeadLetter:
    """A message the broker gave up on, with why, and whether its work may have run anyway
    (``maybe_ran``: it was handed to a member, or taken back from the journal after a restart):
    replaying such a letter may run it twice, so a replay of it must be forced."""

    dlq_id: str
    reason: str
    detail: str
    header: dict[str, Any]
    body: Body
    at: float
    maybe_ran: bool = False

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
            "maybe_ran": self.maybe_ran,
            "body": self.body,
        }


class DeadLetterQueue:
    """Bounded, ordered dead letters; eviction of the oldest is counted, never silent."""

    def __init__(self, limit: int, journal: NoJournal | None = None) -> None:
        self.limit = limit
        self.evicted = 0
        self.journal = journal if journal is not None else NoJournal()
        self._entries: OrderedDict[str, DeadLetter] = OrderedDict()
        self._ids = itertools.count(1)

    def load(self,
             rows: list[tuple[int, str, str, str, dict[str, Any], bytes, float, bool]]) -> None:
        """Take back the dead letters a journal kept (oldest first); new ids continue after them."""
        for _seq, dlq_id, reason, detail, header, body, at, maybe_ran in rows:
            self._entries[dlq_id] = DeadLetter(dlq_id, reason, detail, header, body, at, maybe_ran)
        if rows:
            self._ids = itertools.count(max(row[0] for row in rows) + 1)

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, reason: str, detail: str, header: dict[str, Any], body: Body,
            maybe_ran: bool = False) -> DeadLetter:
        """Record a dead letter and return it."""
        seq = next(self._ids)
        letter = DeadLetter(f"dl-{seq}", reason, detail, dict(header), body, time.time(), maybe_ran)
        self._entries[letter.dlq_id] = letter
        log.info("dead letter %s: %s %s from %s to %s (%s)", letter.dlq_id,
                 header.get("type", "message"), header.get("id"), header.get("from"),
                 header.get("to"),
                 f"{reason}: {detail}" if detail else reason)
        self.journal.letter_added(seq, letter)
        while len(self._entries) > self.limit:
            oldest, _ = self._entries.popitem(last=False)
            self.journal.letter_removed(oldest)
            self.evicted += 1
        return letter

    def add_busy_copies(self, outcomes: list[tuple[str, str, str]], header: dict[str, Any],
                        body: Body) -> list[str]:
        """Dead-letter the copies of a message refused for room (``busy``) when another copy
        failed for good: its sender is told that failure and will not resend, so these copies
        would otherwise be lost unseen. Their dlq ids."""
        why = "not resent, since another copy failed"
        return [self.add(status, f"{detail}; {why}", header, body).dlq_id
                for _, status, detail in outcomes if status == Status.BUSY]

    def list(self) -> list[DeadLetter]:
        """All dead letters, oldest first."""
        return list(self._entries.values())

    def get(self, dlq_id: str) -> DeadLetter | None:
        """One dead letter, left in the queue."""
        return self._entries.get(dlq_id)

    def take(self, dlq_id: str) -> DeadLetter | None:
        """Remove and return one dead letter (for replay)."""
        letter = self._entries.pop(dlq_id, None)
        if letter is not None:
            self.journal.letter_removed(dlq_id)
        return letter

    def purge(self, dlq_id: str | None = None) -> int:
        """Remove one dead letter, or all of them; return how many went."""
        if dlq_id is None:
            count = len(self._entries)
            self._entries.clear()
            self.journal.letters_purged()
            return count
        return 1 if self.take(dlq_id) is not None else 0
