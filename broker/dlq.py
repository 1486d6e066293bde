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
from typing import Any, Final

from robotlab.bus.config import BrokerConfig
from robotlab.bus.wire.protocol import Body, Status, pack

from .journal import NoJournal

log = logging.getLogger("robotlab.broker")

UNJOURNALED_MAX_BYTES: Final = 64 * 1024 * 1024
"""What dead letters may hold in a broker without a journal, unless configured."""
LISTED_BODY_BYTES: Final = 4096
"""Bodies up to this size are listed whole; a larger one is left out of a listing, which then
stays small for thousands of letters (a replay still routes the whole body)."""
LETTER_OVERHEAD: Final = 256
"""Bytes counted for a letter's record beyond its body, header and detail (:func:`letter_bytes`)."""


def letter_budget(config: BrokerConfig) -> int:
    """The bytes ``config``'s dead letters may hold (see ``BrokerConfig.dlq_max_bytes``): half of
    the journal's bound by default, so that a night of failures never fills the journal and turns
    every live send away ``busy``."""
    if config.dlq_max_bytes is not None:
        return config.dlq_max_bytes
    return config.journal_max_bytes // 2 if config.journal else UNJOURNALED_MAX_BYTES


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
        """Plain data for ``robotlab dlq list``; the body stays msgpack for the client to decode,
        and is left out (None) past :data:`LISTED_BODY_BYTES`: ``body_bytes`` gives its size."""
        listed = len(self.body) <= LISTED_BODY_BYTES
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
            "body": self.body if listed else None,
            "body_bytes": len(self.body),
        }


def letter_bytes(letter: DeadLetter) -> int:
    """What ``letter`` counts for against the queue's byte bound: its body, its header packed (a
    sender may fill one with fields of its own, up to the protocol's 64 KiB), its detail and
    :data:`LETTER_OVERHEAD`. Packed again when the letter leaves (an accepted header is never
    changed), so the count a letter added is the count it takes away."""
    return len(letter.body) + len(pack(letter.header)) + len(letter.detail) + LETTER_OVERHEAD


class DeadLetterQueue:
    """Bounded, ordered dead letters; eviction of the oldest is counted and logged, never
    silent. Bounded twice: at most ``limit`` letters and ``max_bytes`` of them
    (:func:`letter_bytes`), the newest letter kept whatever its size."""

    def __init__(self, limit: int, journal: NoJournal | None = None,
                 max_bytes: int = UNJOURNALED_MAX_BYTES) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self.bytes = 0
        """What the letters held count for against ``max_bytes``."""
        self.evicted = 0
        self.journal = journal if journal is not None else NoJournal()
        self._entries: OrderedDict[str, DeadLetter] = OrderedDict()
        self._ids = itertools.count(1)

    def load(self,
             rows: list[tuple[int, str, str, str, dict[str, Any], bytes, float, bool]]) -> None:
        """Take back the dead letters a journal kept (oldest first); new ids continue after them."""
        for _seq, dlq_id, reason, detail, header, body, at, maybe_ran in rows:
            letter = DeadLetter(dlq_id, reason, detail, header, body, at, maybe_ran)
            self._entries[dlq_id] = letter
            self.bytes += letter_bytes(letter)
        if rows:
            self._ids = itertools.count(max(row[0] for row in rows) + 1)
        self._evict()  # a journal kept under a larger bound

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
        self.bytes += letter_bytes(letter)
        self._evict()
        return letter

    def _evict(self) -> None:
        """Drop the oldest letters until both bounds hold (the newest always stays)."""
        while len(self._entries) > self.limit or (self.bytes > self.max_bytes
                                                  and len(self._entries) > 1):
            oldest, letter = self._entries.popitem(last=False)
            self.bytes -= letter_bytes(letter)
            self.journal.letter_removed(oldest)
            self.evicted += 1
            log.warning("dead letter %s evicted, the queue being full (%d letters, %d bytes): "
                        "%s to %s (%s); `robotlab dlq list` shows what is kept", oldest,
                        len(self._entries), self.bytes, letter.header.get("id"),
                        letter.header.get("to"), letter.reason)

    def add_busy_copies(self, outcomes: list[tuple[str, str, str]], header: dict[str, Any],
                        body: Body) -> list[str]:
        """Dead-letter the copies of a message refused for room (``busy``) when another copy
        failed for good: its sender is told that failure and will not resend, so these copies
        would otherwise be lost unseen. Their dlq ids."""
        why = "not resent, since another copy failed"
        return [self.add(status, f"{detail}; {why}", header, body).dlq_id
                for _, status, detail in outcomes if status == Status.BUSY]

    def page(self, after: str | None, limit: int | None) -> list[DeadLetter]:
        """The letters after the one with id ``after`` (None: from the oldest), oldest first, at
        most ``limit`` (None: all). ``after`` need not be kept still: ids grow with time."""
        start = _number(after) if after is not None else 0
        newer = (letter for letter in self._entries.values() if _number(letter.dlq_id) > start)
        return list(itertools.islice(newer, limit))

    def newest(self, count: int) -> list[DeadLetter]:
        """The ``count`` newest letters, oldest first (read from the newest end: cheap whatever
        the queue's length)."""
        return list(itertools.islice(reversed(self._entries.values()), count))[::-1]

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
            self.bytes -= letter_bytes(letter)
            self.journal.letter_removed(dlq_id)
        return letter

    def purge(self, dlq_id: str | None = None) -> int:
        """Remove one dead letter, or all of them; return how many went."""
        if dlq_id is None:
            count = len(self._entries)
            self._entries.clear()
            self.bytes = 0
            self.journal.letters_purged()
            return count
        return 1 if self.take(dlq_id) is not None else 0


def _number(dlq_id: str) -> int:
    """The sequence number of a dead letter's id (``dl-17``: 17).

    Raises:
        ValueError: ``dlq_id`` is not a dead letter's id.
    """
    prefix, _, number = dlq_id.partition("-")
    if prefix != "dl" or not number.isdigit():
        raise ValueError(f"{dlq_id!r} is not a dead letter's id (dl-N)")
    return int(number)
