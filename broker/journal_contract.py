"""What every journal offers the broker: the null journal (memory only), whose methods are the
contract :class:`robotlab.broker.journal.Journal` fills, and what a journal gives back at
start-up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    names: set[str] = field(default_factory=set)
    answered: dict[Key, str] = field(default_factory=dict)
    """The instance that answered each of the most recent handed-out ``any`` messages, oldest
    first: a resend of one after the restart goes back to it, which has its reply."""


class NoJournal:
    """The journal of a broker that keeps everything in memory (the embedded broker's)."""

    path: str | None = None
    healthy = True
    size = 0

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
        """Always room."""
        return True

    def put(self, key: Key, header: dict[str, Any], body: Body, notify: str | None,
            receipt_id: str) -> None:
        """Nothing kept."""

    def settle(self, key: Key) -> None:
        """Nothing kept."""

    def written(self, key: Key) -> bool:
        """Nothing is ever in a file."""
        return False

    def owned(self, key: Key, instance: str) -> None:
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
