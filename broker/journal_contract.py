"""What every journal offers the broker: the null journal (memory only), whose methods are the
contract :class:`robotlab.broker.journal.Journal` fills, and what a journal gives back at
start-up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from robotlab.bus.wire.protocol import Body

Key = tuple[str, str]
"""A message's key: (its sender's instance, its id)."""
Unsettled = tuple[dict[str, Any], bytes, str | None, Key, str, str | None, list[str] | None]
"""(header, body, notify, key, receipt id, owner, effects) of a message not settled yet."""
Letter = tuple[int, str, str, str, dict[str, Any], bytes, float, bool]
"""(seq, dlq_id, reason, detail, header, body, at, maybe_ran) of a dead letter."""


@dataclass
class Restored:
    """What a journal held at start-up."""

    messages: list[Unsettled] = field(default_factory=list)
    """Every unsettled message, oldest first."""
    letters: list[Letter] = field(default_factory=list)
    """Every dead letter, oldest first."""
    names: list[str] = field(default_factory=list)
    """The robot names seen, the one seen longest ago first."""
    answered: dict[Key, str] = field(default_factory=dict)
    """The instance that answered each of the most recent handed-out ``any`` messages, oldest
    first: a resend of one after the restart goes back to it, which has its reply."""
    members: dict[str, str] = field(default_factory=dict)
    """Every instance that may hold work of an ``any`` message, with its name
    (:mod:`robotlab.broker.journal_members`)."""


ROW_BYTES: Final = 256
"""What an unsettled message counts for beyond its body until its header is packed (at a
journal's commit; in memory, for as long as it is kept)."""
MEMORY_MAX_BYTES: Final = 256 * 1024 * 1024
"""What a broker without a journal keeps of unsettled messages unless told otherwise (the
default of ``--journal-max-bytes``)."""


class NoJournal:
    """The journal of a broker that keeps everything in memory (``--no-journal``, the embedded
    broker's): nothing is written, and the unsettled messages kept in memory are bounded as a
    file's would be (``max_bytes``: each body plus ``ROW_BYTES``), so that no sender can fill the
    broker's memory with messages held for a robot that never comes."""

    path: str | None = None
    healthy = True
    full = "the broker keeps as many unsettled messages in memory as it may (--journal-max-bytes)"
    """Why a SEND is turned away ``busy`` while :meth:`room_for` says no."""

    def __init__(self, max_bytes: int = MEMORY_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        """The bytes the unsettled messages count for."""
        self._sizes: dict[Key, int] = {}

    def due(self, now: float) -> bool:
        """True when changes must be committed this turn even if no receipt waits on them."""
        return False

    def next_commit(self) -> float | None:
        """When pending changes fall due (monotonic seconds), for the loop's poll timeout."""
        return None

    def restore(self) -> Restored:
        """Nothing to restore."""
        return Restored()

    def room_for(self, size: int) -> bool:
        """True when a message of ``size`` bytes still fits."""
        return self.size + size <= self.max_bytes

    def put(self, key: Key, header: dict[str, Any], body: Body, notify: str | None,
            receipt_id: str, header_bytes: int = 0) -> None:
        """Count an accepted message until :meth:`settle` (nothing is written): its body, its
        header as it came (``header_bytes``) and ``ROW_BYTES``."""
        size = ROW_BYTES + header_bytes + len(body)
        self.size += size - self._sizes.get(key, 0)
        self._sizes[key] = size

    def settle(self, key: Key) -> None:
        """Stop counting a message."""
        self.size -= self._sizes.pop(key, 0)

    def written(self, key: Key) -> bool:
        """Nothing is ever in a file."""
        return False

    def owned(self, key: Key, instance: str) -> None:
        """Nothing kept."""

    def member(self, instance: str, name: str) -> bool:
        """Nothing to wait for: a restart finds no file."""
        return True

    def member_left(self, instance: str) -> None:
        """Nothing kept."""

    def effects(self, key: Key, done: list[str]) -> None:
        """Nothing kept."""

    def answered(self, key: Key, instance: str) -> None:
        """Nothing kept."""

    def letter_added(self, seq: int, letter: Any) -> None:
        """Nothing kept."""

    def letter_removed(self, dlq_id: str) -> None:
        """Nothing kept."""

    def letters_purged(self) -> None:
        """Nothing kept."""

    def name_seen(self, name: str) -> None:
        """Nothing kept."""

    def commit(self, everything: bool = False) -> bool:
        """Nothing to write."""
        return True

    def idle(self) -> None:
        """Nothing to checkpoint."""

    def close(self) -> None:
        """Nothing to close."""
