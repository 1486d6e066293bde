"""The dead letters' side of the broker's journal: the letters added and dropped since the last
commit, and the bytes each stored letter counts for (against ``--journal-max-bytes``, with the
unsettled messages: :mod:`robotlab.broker.journal`)."""

from __future__ import annotations

from typing import Any

from robotlab.bus.wire.protocol import pack

LetterRow = tuple[int, str, str, str, bytes, bytes, float, int]
"""A ``dead_letters`` row: seq, dlq id, reason, detail, packed header, body, at, maybe ran."""


class FileLetters:
    """The dead letters' changes not committed yet, and every stored letter's size."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        """The bytes each letter counts for (header packed, and body), by dlq id."""
        self._added: dict[str, LetterRow] = {}
        self._dropped: set[str] = set()
        self._purge = False

    def add(self, seq: int, letter: Any) -> int:
        """Keep a dead letter (a :class:`~robotlab.broker.dlq.DeadLetter`); the bytes it
        counts for."""
        header = pack(letter.header)
        self._added[letter.dlq_id] = (seq, letter.dlq_id, letter.reason, letter.detail, header,
                                      letter.body, letter.at, int(letter.maybe_ran))
        self.sizes[letter.dlq_id] = len(header) + len(letter.body)
        return self.sizes[letter.dlq_id]

    def remove(self, dlq_id: str) -> int:
        """Forget a dead letter; the bytes that frees."""
        if self._added.pop(dlq_id, None) is None:
            self._dropped.add(dlq_id)
        return self.sizes.pop(dlq_id, 0)

    def purge(self) -> int:
        """Forget every dead letter; the bytes that frees."""
        freed = sum(self.sizes.values())
        self.sizes.clear()
        self._added.clear()
        self._dropped.clear()
        self._purge = True
        return freed

    def pending(self) -> bool:
        """Whether the next commit has letters to write or delete."""
        return bool(self._added or self._dropped or self._purge)

    def rows(self, changes: dict[str, Any]) -> None:
        """Put the pending changes into a commit's change set (``purge``, ``dropped``,
        ``letters``)."""
        changes["purge"] = self._purge
        changes["dropped"] = [(dlq_id,) for dlq_id in self._dropped]
        changes["letters"] = list(self._added.values())

    def committed(self) -> None:
        """The pending changes are in the file."""
        self._added.clear()
        self._dropped.clear()
        self._purge = False
