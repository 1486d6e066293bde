"""The active journal's commits not yet streamed to the passive broker, folded into one.

The active broker commits at the end of every loop turn that has something waiting on the
file: a message that outlives the commit interval is written, and deleted a turn or two
later, when its reply settles it. Streamed one by one, each of those commits was a
message to the passive broker and a transaction in its SQLite file, on the same cores as the
round trip. Folded, a message put and settled between two sends never reaches the peer, and
what is left is one transaction per batch (:mod:`robotlab.broker.replica` sends a batch as
soon as a sender is to be told something that waits for the peer, and else within the
journal's commit interval).

Folding keeps the file's meaning: a :func:`~robotlab.broker.journal_changes.write` of the
folded set leaves the same rows as the commits written one after another. That holds because
``write`` applies a set's parts in a fixed order (deletes, puts, owners, effects; the dead
letters' purge, drops, letters) and folding keeps, for each key, only what its last change decides.
"""

from __future__ import annotations

from typing import Any

from .journal_changes import Changes, empty

Key = tuple[Any, Any]


class Batch:
    """Commits folded into one change set (:meth:`fold`), then sent as :meth:`changes`."""

    def __init__(self) -> None:
        self.settled: dict[Key, None] = {}
        """Deleted from the peer's file; kept even when the put was folded away here, since the
        peer may hold the message from an earlier batch (a message put again)."""
        self.puts: dict[Key, list[Any]] = {}
        self.owners: dict[Key, list[Any]] = {}
        self.effects: dict[Key, list[Any]] = {}
        self.purge = False
        self.dropped: dict[Any, None] = {}
        self.letters: dict[Any, list[Any]] = {}
        self.names: dict[Any, float] = {}
        """When each name was last seen."""
        self.answered: dict[Key, list[Any]] = {}
        self.members: dict[Any, Any] = {}
        """Each member's last change: its name (joined), or None (left)."""
        self.commits = 0
        """How many commits the batch holds."""

    def fold(self, changes: Changes) -> None:
        """Add a later commit: the batch then writes as the commits so far would, in order. (A
        commit never resets the file: only a snapshot does, and it is sent whole, not folded.)"""
        self.commits += 1
        self._fold_messages(changes)
        self._fold_letters(changes)
        for row in changes.get("names", ()):  # an older peer's rows have no time
            self.names[row[0]] = max(row[1] if len(row) > 1 else 0.0, self.names.get(row[0], 0.0))
        for row in changes.get("answered", ()):
            key = (row[0], row[1])
            self.answered.pop(key, None)  # the newest last, as the peer's file orders them
            self.answered[key] = row
        for instance, name in changes.get("joined", ()):
            self.members[instance] = name
        for (instance,) in changes.get("left", ()):
            self.members[instance] = None

    def _fold_messages(self, changes: Changes) -> None:
        for sender, message_id in changes.get("settled", ()):
            key = (sender, message_id)
            self.puts.pop(key, None)
            self.owners.pop(key, None)
            self.effects.pop(key, None)
            self.settled[key] = None
        for row in changes.get("puts", ()):
            key = (row[0], row[1])
            self.puts[key] = row
            self.owners.pop(key, None)  # a message put again has no owner nor effects yet
            self.effects.pop(key, None)
        for row in changes.get("owners", ()):
            self.owners[(row[1], row[2])] = row
        for row in changes.get("effects", ()):
            self.effects[(row[1], row[2])] = row

    def _fold_letters(self, changes: Changes) -> None:
        if changes.get("purge"):
            self.purge = True
            self.dropped.clear()
            self.letters.clear()
        for (dlq_id,) in changes.get("dropped", ()):
            self.letters.pop(dlq_id, None)
            self.dropped[dlq_id] = None  # as settled: the peer may hold it from an earlier batch
        for row in changes.get("letters", ()):
            self.letters[row[1]] = row

    def changes(self) -> Changes:
        """The folded change set."""
        changes = empty()
        changes["settled"] = list(self.settled)
        changes["puts"] = list(self.puts.values())
        changes["owners"] = list(self.owners.values())
        changes["effects"] = list(self.effects.values())
        changes["purge"] = self.purge
        changes["dropped"] = [(dlq_id,) for dlq_id in self.dropped]
        changes["letters"] = list(self.letters.values())
        changes["names"] = [(name, seen) for name, seen in self.names.items()]
        changes["answered"] = list(self.answered.values())
        changes["joined"] = [(i, name) for i, name in self.members.items() if name is not None]
        changes["left"] = [(i,) for i, name in self.members.items() if name is None]
        return changes
