"""The broker's journal: what it accepted, in one SQLite file, so a restart loses none of it.

Five tables: ``messages`` (every accepted message not yet settled), ``dead_letters`` (the
DLQ), ``names`` (the robot names seen most recently, so a restarted broker knows whom to hold
messages for), ``members`` (every instance that may hold work of an ``any`` message, asked at a
restart what it holds: :mod:`robotlab.broker.journal_members`) and ``answered`` (the instance
that answered each of the last
``ANSWERED_KEPT`` ``any`` messages: its sender may not have the reply yet, since a reply the
broker had not passed on is lost with it, and sends the request again, which must go back to
that instance, holding the reply, and not run on another). Changes are collected and written
in one transaction at the end of a loop turn (:meth:`Journal.commit`), never more than one a
turn. The broker sends a turn's receipts and admin replies only after that commit, so nothing
it has told a sender can be lost with it.

A turn that has nothing to tell anyone may leave its changes for a later turn, each for up to
``interval`` seconds: every message it accepted is still held by its sender, who resends it
after a reconnect until it has a receipt or a reply. An accepted message falls due ``interval``
after its own acceptance, plus the time its body takes to reach a receiver and be settled at
``GRACE_PER_BYTE``: a request answered in the usual time never touches the file, whatever its
size and while other requests come and go. (A flat interval wrote every large body, and a 4 MiB
write with its later delete cost the broker's loop more than moving the body did.) A commit
writes the accepted messages up to the last one that is due, in the order they came, and leaves
the younger ones: a receipt for one message does not write the large bodies still in flight
behind it. A message whose sender keeps no copy (``receipt=False``) is committed in its own
turn. The journal costs little on the hot path (measured in docs/benchmarks.md).

WAL mode with ``synchronous=NORMAL``: a committed turn survives the broker being killed (the
WAL is in the operating system's cache), though not a power cut of the host. The file is locked
for the broker's life (``locking_mode=EXCLUSIVE``): a second broker on the same journal is a
start-up error, not two brokers replaying each other's messages.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from heapq import heappop, heappush
from time import monotonic
from typing import Any, Final

from robotlab.bus.wire.protocol import Body, pack

from .journal_changes import NAMES_KEPT, Answers, Changes, Updates, empty, snapshot, write
from .journal_contract import ROW_BYTES, Key, NoJournal, Restored
from .journal_file import CHECKPOINT_SPACING, checkpoint, open_file, read_back
from .journal_letters import FileLetters
from .journal_members import FileMembers, FileNames

log = logging.getLogger("robotlab.broker")


INTERVAL: Final = 0.01
"""The longest a change waits for a commit when no receipt depends on it (seconds)."""
GRACE_PER_BYTE: Final = 1e-8
"""How much longer a message may wait for its commit per byte of body (seconds): 10 ms a MB, a
pace well under what one round trip moves on a loaded machine, so a body that is delivered and
settled in the usual time is never written. A 4 MiB body waits up to 52 ms, its sender holding
its own copy all the while."""


class Journal(NoJournal):
    """An SQLite journal at ``path``; stored message bytes stay under ``max_bytes``."""

    full = "the broker's journal is full (or failing)"

    def __init__(self, path: str, max_bytes: int, interval: float = INTERVAL,
                 names_kept: int = NAMES_KEPT) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.interval = interval
        self.healthy = True
        self.size = 0
        self._since: float | None = None
        """When the oldest uncommitted change other than a put was made (a put keeps its own
        time)."""
        self._urgent = False
        self._sizes: dict[Key, int] = {}
        self._puts: dict[Key, tuple[str | None, str, dict[str, Any], Body, float]] = {}
        """Accepted and not written or settled yet, oldest first, each with the time it falls
        due."""
        self._dues: list[tuple[float, Key]] = []
        """A heap of (due, key) of the puts, the earliest first; an entry whose put was settled,
        written or put again since is left in it and skipped when it comes to the top."""
        self._unchecked = False  # written since the last checkpoint
        self._next_checkpoint = 0.0
        # a dead letter left: the next commit writes every put (see letter_removed)
        self._write_all = False
        self._settled: set[Key] = set()
        self._updates = Updates()
        """Each kept message's owner and completed side-effect calls, until written."""
        self.letters = FileLetters()
        self.names = FileNames(names_kept)
        self._answers = Answers()
        self.members = FileMembers()
        self._parts = (self.letters, self.names, self.members)  # pending, rows, committed
        self.replica: Callable[[Changes, bool], None] | None = None
        """Called with each commit's changes once they are written (a standby pair's stream), and
        whether they hold a message whose sender keeps no copy (or an owner of a message written
        earlier), which must not wait."""
        self._db = open_file(path)

    # -- start-up -------------------------------------------------------------------------------

    def restore(self) -> Restored:
        """Read everything back (once, at start-up) and count the stored bytes."""
        restored, self._sizes, self.letters.sizes = read_back(self._db)
        self.members.held = dict(restored.members)
        self.size = sum(self._sizes.values()) + sum(self.letters.sizes.values())
        return restored

    # -- changes of one loop turn ----------------------------------------------------------------

    def room_for(self, size: int) -> bool:
        """True when a message of ``size`` bytes still fits (and the last commit worked)."""
        return self.healthy and self.size + size <= self.max_bytes

    def due(self, now: float) -> bool:
        """True when changes must be committed this turn even if no receipt waits on them."""
        if self._urgent:
            return True
        due = self.next_commit()
        return due is not None and now >= due

    def next_commit(self) -> float | None:
        """When pending changes fall due (monotonic seconds), for the loop's poll timeout: the
        oldest other change's time plus the interval, or the earliest put's due time."""
        due = None if self._since is None else self._since + self.interval
        answers_due = self._answers.due_at()  # see ANSWERED_INTERVAL
        if answers_due is not None and (due is None or answers_due < due):
            due = answers_due
        dues, puts = self._dues, self._puts
        while dues:  # skip what was settled, written or put again since its entry was pushed
            put_due, key = dues[0]
            put = puts.get(key)
            if put is not None and put[4] == put_due:
                return put_due if due is None or put_due < due else due
            heappop(dues)
        return due

    def _changed(self) -> None:
        if self._since is None:
            self._since = monotonic()

    def put(self, key: Key, header: dict[str, Any], body: Body, notify: str | None,
            receipt_id: str, header_bytes: int = 0) -> None:
        """Keep an accepted message until :meth:`settle`.

        Its header is packed at the commit, and only if it is unsettled by then: most messages
        settle within the interval and never reach the file. Until then it counts as its header
        as it came (``header_bytes``) and ``ROW_BYTES`` beyond its body; the broker never changes
        a header it has accepted.
        """
        urgent = header.get("receipt") is False  # its sender keeps no copy: written this turn
        self._urgent = self._urgent or urgent
        if key in self._puts:  # put again: it moves to the end, so the first put stays the oldest
            del self._puts[key]
        due = 0.0 if urgent else monotonic() + self.interval + len(body) * GRACE_PER_BYTE
        self._puts[key] = (notify, receipt_id, header, body, due)
        heappush(self._dues, (due, key))
        self._settled.discard(key)
        size = self._sizes[key] = ROW_BYTES + header_bytes + len(body)
        self.size += size

    def owned(self, key: Key, instance: str) -> None:
        """Note the instance a kept ``any`` message is handed to, written with the message or, if
        that was written, within the interval: nothing waits for it (see :meth:`member`)."""
        self._update("owners", key, instance, urgent=False)

    def member(self, instance: str, name: str) -> bool:
        """True when the file holds ``instance`` (of ``name``) as one that may hold ``any`` work;
        else it is written by this turn's commit, which what is handed to it waits for."""
        if self.members.covers(instance, name):
            return True
        self._urgent = True
        return False

    def member_left(self, instance: str) -> None:
        """``instance`` holds no ``any`` work any more (it said BYE, or stayed away past the
        hold): a restart need not wait for it."""
        if self.members.leave(instance):
            self._changed()

    def effects(self, key: Key, done: list[str]) -> None:
        """Note the side-effect calls completed on a kept message (their keys): a completed side
        effect is worth a commit, which falls due now (with the message, if it was not written)."""
        self._update("effects", key, pack(done), urgent=True)

    def _update(self, field: str, key: Key, value: Any, urgent: bool) -> None:
        if key in self._sizes:
            self._updates.pending[field][key] = value
            put = self._puts.get(key)
            if put is None:
                self._changed()
                self._urgent = self._urgent or urgent
            elif urgent:
                self._puts[key] = (*put[:4], 0.0)
                heappush(self._dues, (0.0, key))

    def answered(self, key: Key, instance: str) -> None:
        """Remember that ``instance`` answered the ``any`` message ``key`` (see the module doc)."""
        self._answers.add(key, instance)

    def written(self, key: Key) -> bool:
        """True when the file holds the message ``key`` (a restart would take it back): written
        and not deleted yet, whether or not it was settled since."""
        return key in self._sizes and key not in self._puts or key in self._settled

    def settle(self, key: Key) -> None:
        """Forget a message that was delivered or dead-lettered: a put not written yet is simply
        dropped (nothing falls due for it); a written one is deleted at the next commit."""
        self._updates.drop(key)
        self.size -= self._sizes.pop(key, 0)
        if self._puts.pop(key, None) is None:
            self._changed()
            self._settled.add(key)
        elif not self._puts:
            self._dues.clear()  # all stale: a busy broker that settles everything keeps no heap

    def letter_added(self, seq: int, letter: Any) -> None:
        """Keep a dead letter (a :class:`~robotlab.broker.dlq.DeadLetter`)."""
        self._changed()
        self.size += self.letters.add(seq, letter)

    def letter_removed(self, dlq_id: str) -> None:
        """Forget a dead letter (replayed, purged or evicted). A replay puts its message back
        in the same turn, with no sender holding a copy: the commit that drops the letter writes
        every put with it, so the message is always in one table or the other."""
        self._changed()
        self._write_all = True
        self.size -= self.letters.remove(dlq_id)

    def letters_purged(self) -> None:
        """Forget every dead letter."""
        self._changed()
        self.size -= self.letters.purge()

    def name_seen(self, name: str) -> None:
        """Remember that a robot name said HELLO now (the file keeps the ``names_kept`` seen
        most recently)."""
        self._changed()
        self.names.seen(name)

    def commit(self, everything: bool = False) -> bool:
        """Write this turn's changes in one transaction: every settle, dead letter and name, and
        the accepted messages up to the last one that is due (``everything``: all of them); the
        younger ones wait for their own time. False (all kept for the next turn) on failure."""
        puts = self._due_puts(everything)
        writing = set(puts)
        updates = self._updates.due(self._puts, writing)
        if not (puts or self._settled or any(updates.values()) or self._answers.due(everything)
                or any(part.pending() for part in self._parts)):
            # Everything changed since the last commit cancelled out (most often a message put
            # and settled within the interval): nothing is due any more. Left set, the stale
            # start made every later turn commit at once (writing each message the moment it
            # was accepted) and the loop wake every millisecond while idle.
            self._since, self._urgent, self._write_all = None, False, False
            return True
        try:
            self._write(puts, updates)
            self._unchecked = True
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            if self.healthy:
                log.error("journal %s: a write failed (%s); new sends get busy until it works "
                          "again", self.path, exc)
            self.healthy = False
            return False
        for key in puts:
            del self._puts[key]
        self._updates.forget(updates)
        if not self._puts:
            self._dues.clear()
        self._settled.clear()
        self._answers.committed()
        for part in self._parts:
            part.committed()
        self._since, self._urgent, self._write_all = None, False, False
        self.healthy = True
        return True

    def _due_puts(self, everything: bool) -> list[Key]:
        """The puts to write now, oldest first: up to the last one that is due, so the file
        keeps them in the order they came (a restart hands held messages on in that order)."""
        if everything or self._write_all:
            return list(self._puts)
        due = self.next_commit()
        now = monotonic()
        if due is None or due > now or not self._puts:
            return []
        keys = list(self._puts)
        last = max((i for i, key in enumerate(keys) if self._puts[key][4] <= now), default=-1)
        return keys[: last + 1]

    def _write(self, puts: list[Key], updates: dict[str, dict[Key, Any]]) -> None:
        changes = empty()
        changes["settled"] = list(self._settled)
        changes["puts"] = self._rows(puts)
        self._updates.rows(updates, changes)
        self._answers.rows(changes)
        for part in self._parts:
            part.rows(changes)
        write(self._db, changes, self.names.kept)
        if self.replica is not None:
            self.replica(changes, self._urgent)

    def apply(self, changes: Changes) -> None:
        """Write another journal's commit (a standby's copy of its active peer's) as it is.

        Raises:
            sqlite3.Error: the write failed (rolled back).
        """
        try:
            write(self._db, changes, self.names.kept)
        except sqlite3.Error:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        self._unchecked = True

    def snapshot(self) -> Changes:
        """Everything this journal holds, pending changes written first, as one change set."""
        self.commit(everything=True)
        return snapshot(self._db)

    def _rows(self, puts: list[Key]) -> list[tuple[str, str, str | None, str, bytes, Body]]:
        """The puts as rows, each header packed now and its size counted exactly."""
        rows = []
        for key in puts:
            notify, receipt_id, header, body, _ = self._puts[key]
            packed = pack(header)
            size = len(packed) + len(body)
            self.size += size - self._sizes.get(key, size)
            self._sizes[key] = size
            rows.append((key[0], key[1], notify, receipt_id, packed, body))
        return rows

    def idle(self) -> None:
        """The loop has nothing to do: copy the write-ahead log into the file now, so no commit
        on the hot path has to; at most once every ``CHECKPOINT_SPACING`` seconds."""
        now = monotonic()
        if self._unchecked and self.healthy and now >= self._next_checkpoint:
            self._next_checkpoint = now + CHECKPOINT_SPACING
            self._unchecked = not checkpoint(self._db, self.path)

    def close(self) -> None:
        """Write what is pending and close the file."""
        self.commit(everything=True)
        self._db.close()
