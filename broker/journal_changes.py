"""One commit of the journal as data: what it writes to the file, and the same changes written
to another journal's file (a standby pair's backup, :mod:`robotlab.broker.replica`).

A change set is a plain dict of lists, so msgpack carries it between the two brokers as it is:

- ``reset``: the receiving file is emptied first (a whole snapshot follows);
- ``settled``: (sender, id) of messages to delete;
- ``puts``: message rows (sender, id, notify, receipt id, packed header, body);
- ``owners``: (owner, sender, id) of handed-out ``any`` messages;
- ``effects``: (packed list of keys, sender, id) of side-effect calls completed on messages;
- ``purge``: every dead letter dropped; ``dropped``: (dlq id,) of letters dropped; ``letters``:
  letter rows;
- ``names``: (name, seen) of robot names seen, with the wall-clock time (an older broker's
  rows are (name,)); ``answered``: (sender, id, instance) that answered;
- ``joined``: (instance, name) of members that may hold ``any`` work, ``left``: (instance,) of
  those that no longer may (:mod:`robotlab.broker.journal_members`); a snapshot's ``members``,
  all of them. An older broker's sets have none of the three.
"""

from __future__ import annotations

import sqlite3
from time import monotonic
from typing import Any, Final

from .holds import KNOWN_MAX
from .journal_contract import Key

Changes = dict[str, Any]

ANSWERED_KEPT = 4096
"""How many answered ``any`` messages a journal remembers the instance of (as the broker
remembers receipts in memory)."""

ANSWERED_INTERVAL: Final = 1.0
"""The longest who answered an ``any`` message waits for a commit (seconds): steady traffic to a
pool would otherwise commit once every commit interval for these rows alone, about 3 GiB an hour
through the write-ahead log and its checkpoints (docs/durability.md, "The cost of remembering
who answered")."""

NAMES_KEPT = KNOWN_MAX
"""How many robot names a journal remembers, those seen most recently (as the broker in memory):
past it, a HELLO storm of ever new names would grow the file for good."""

TABLES = ("messages", "dead_letters", "names", "answered", "members")


def empty() -> Changes:
    """A change set that changes nothing."""
    return {"reset": False, "settled": [], "puts": [], "owners": [], "effects": [],
            "purge": False, "dropped": [], "letters": [], "names": [], "answered": [],
            "joined": [], "left": []}


MESSAGE_ROWS = (
    ("settled", "DELETE FROM messages WHERE sender = ? AND id = ?"),
    ("puts", "INSERT OR REPLACE INTO messages (sender, id, notify, receipt_id, header, body) "
             "VALUES (?, ?, ?, ?, ?, ?)"),
    ("owners", "UPDATE messages SET owner = ? WHERE sender = ? AND id = ?"),
    ("effects", "UPDATE messages SET effects = ? WHERE sender = ? AND id = ?"),
)
# after the purge of every dead letter, which comes before the letters of the same commit
OTHER_ROWS = (
    ("dropped", "DELETE FROM dead_letters WHERE dlq_id = ?"),
    ("letters", "INSERT OR REPLACE INTO dead_letters VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
    ("answered", "INSERT OR REPLACE INTO answered VALUES (?, ?, ?)"),
    ("members", "INSERT OR REPLACE INTO members VALUES (?, ?)"),
    ("joined", "INSERT OR REPLACE INTO members VALUES (?, ?)"),
    ("left", "DELETE FROM members WHERE instance = ?"),
)


def write(db: sqlite3.Connection, changes: Changes, names_kept: int = NAMES_KEPT) -> None:
    """Write ``changes`` in one transaction (the caller rolls back on ``sqlite3.Error``), keeping
    the ``names_kept`` names seen most recently."""
    db.execute("BEGIN")
    if changes["reset"]:
        for table in TABLES:
            db.execute(f"DELETE FROM {table}")  # noqa: S608  (a name from the tuple above)
    _rows(db, changes, MESSAGE_ROWS)
    if changes["purge"]:
        db.execute("DELETE FROM dead_letters")
    _rows(db, changes, OTHER_ROWS)
    if changes["names"]:
        _write_names(db, changes["names"], names_kept)
    if changes["answered"]:
        db.execute("DELETE FROM answered WHERE rowid <= (SELECT MAX(rowid) FROM answered) - ?",
                   (ANSWERED_KEPT,))
    db.execute("COMMIT")


def _write_names(db: sqlite3.Connection, rows: list[Any], kept: int) -> None:
    # a time never goes back: a peer's older broker sends names without one
    db.executemany("INSERT INTO names (name, seen) VALUES (?, ?) ON CONFLICT (name) DO UPDATE "
                   "SET seen = max(seen, excluded.seen)",
                   [(row[0], row[1] if len(row) > 1 else 0.0) for row in rows])
    # walks the index down to the kept-th newest: nothing to delete until there are more
    db.execute("DELETE FROM names WHERE seen < "
               "(SELECT seen FROM names ORDER BY seen DESC LIMIT 1 OFFSET ?)", (kept - 1,))


def _rows(db: sqlite3.Connection, changes: Changes,
          statements: tuple[tuple[str, str], ...]) -> None:
    for field, statement in statements:
        if changes.get(field):  # a peer's older broker sends no effects
            db.executemany(statement, changes[field])


def snapshot(db: sqlite3.Connection) -> Changes:
    """Everything the file holds, as a change set that replaces another file's content."""
    changes = empty()
    changes["reset"] = True
    changes["puts"] = [list(row) for row in db.execute(
        "SELECT sender, id, notify, receipt_id, header, body FROM messages ORDER BY rowid")]
    changes["owners"] = [list(row) for row in db.execute(
        "SELECT owner, sender, id FROM messages WHERE owner IS NOT NULL")]
    changes["effects"] = [list(row) for row in db.execute(
        "SELECT effects, sender, id FROM messages WHERE effects IS NOT NULL")]
    changes["letters"] = [list(row) for row in db.execute(
        "SELECT * FROM dead_letters ORDER BY seq")]
    changes["names"] = [list(row) for row in db.execute(
        "SELECT name, seen FROM names ORDER BY seen")]
    changes["answered"] = [list(row) for row in db.execute(
        "SELECT sender, id, owner FROM answered ORDER BY rowid")]
    changes["members"] = [list(row) for row in db.execute("SELECT instance, name FROM members")]
    return changes


class Updates:
    """The columns of kept messages not written yet, per change-set field (``owners``,
    ``effects``), each becoming rows of (value, sender, id)."""

    def __init__(self) -> None:
        self.pending: dict[str, dict[Key, Any]] = {"owners": {}, "effects": {}}

    def drop(self, key: Key) -> None:
        """Forget what was pending for a settled message."""
        for pending in self.pending.values():
            pending.pop(key, None)

    def due(self, unwritten: dict[Key, Any], writing: set[Key]) -> dict[str, dict[Key, Any]]:
        """What to write now: the updates of messages written already or in this commit."""
        return {field: {key: value for key, value in pending.items()
                        if key not in unwritten or key in writing}
                for field, pending in self.pending.items()}

    def rows(self, updates: dict[str, dict[Key, Any]], changes: Changes) -> None:
        """Put ``updates`` (from :meth:`due`) into ``changes`` as rows."""
        for field, each in updates.items():
            changes[field] = [(value, key[0], key[1]) for key, value in each.items()]

    def forget(self, updates: dict[str, dict[Key, Any]]) -> None:
        """Forget ``updates``, committed."""
        for field, each in updates.items():
            for key in each:
                del self.pending[field][key]


class Answers:
    """Who answered each ``any`` message since the last commit: a row waits up to
    ``ANSWERED_INTERVAL`` and rides along with any commit that comes before."""

    def __init__(self) -> None:
        self._owners: dict[Key, str] = {}
        self._since: float | None = None  # when the oldest row not written was noted

    def add(self, key: Key, instance: str) -> None:
        """``instance`` answered the message ``key``."""
        self._owners[key] = instance
        if self._since is None:
            self._since = monotonic()

    def due_at(self) -> float | None:
        """When the rows must be written (monotonic seconds); None with none."""
        return None if self._since is None else self._since + ANSWERED_INTERVAL

    def due(self, everything: bool) -> bool:
        """Whether the rows make a commit of their own now (``everything``: whenever any)."""
        since = self._since
        return since is not None and (everything or monotonic() >= since + ANSWERED_INTERVAL)

    def rows(self, changes: Changes) -> None:
        """Put the rows into ``changes``: ``answered`` (sender, id, instance)."""
        changes["answered"] = [(key[0], key[1], owner) for key, owner in self._owners.items()]

    def committed(self) -> None:
        """The rows are in the file."""
        self._owners.clear()
        self._since = None
