"""A standby pair's journal, kept on both brokers: the active one streams each commit to the
passive one, which writes it to its own journal file and says how far it holds.

The messages go over the pair's state sockets (:mod:`robotlab.broker.standby`), beside the
one-frame states:

- ``[J, epoch, seq, changes]``: a commit of the active broker (a
  :mod:`~robotlab.broker.journal_changes` set);
- ``[S, epoch, seq, changes]``: everything the active journal holds, in place of the passive's;
- ``[P, epoch, seq]``: the active broker's position, once a heartbeat;
- ``[A, epoch, seq]``: the passive broker holds every commit up to ``seq``;
- ``[R, epoch]``: the passive broker is behind (a gap, a new active peer, a stale file of its own):
  send S.

``epoch`` names the active broker's process and ``seq`` counts what it streamed. Commits are
not streamed one by one: they are folded into a batch (:mod:`robotlab.broker.replica_batch`,
where a message put and settled in between never reaches the peer), sent as one J as soon as
something told to a sender waits for the peer, and else at most the journal's commit interval
after the batch's first commit (``STREAM_INTERVAL``); a commit that holds what has no other
copy (a dead letter, a name, a message whose sender keeps none) goes at once. With ``sync`` the
outbox (:mod:`robotlab.broker.outbox`) sends what waits on a commit only once the passive
broker acked it, or once the passive broker is counted gone (two heartbeats without a word):
the active broker then goes on unreplicated, and says so in one line, until the peer is back.

Beside the journal's changes, a commit may name members: ``joined`` (instance, name) of an
instance handed its first ``any`` message, ``left`` (instance,) of one gone for good, and a
snapshot's ``members``, all of them; and ``requesters`` (name,) of the senders of ``any``
messages. The passive broker keeps them in memory: at a takeover the members are asked what
they hold (:mod:`robotlab.broker.claims`), and replies their kept answers send to a requester
not back yet are held for it, not dead-lettered for a name it never heard. An ``any``
message's DELIVER waits for the peer's ack of its member and its requester only (each once),
not of its owner.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import OrderedDict
from typing import Final

from robotlab.bus.wire.protocol import pack, unpack

from .journal import Journal
from .journal_changes import Changes, empty
from .replica_batch import Batch
from .standby import Standby

log = logging.getLogger("robotlab.broker")

COMMIT, SNAPSHOT, POSITION, ACK, RESEND = b"J", b"S", b"P", b"A", b"R"

REQUESTERS_KEPT: Final = 4096
"""Requester names a replica remembers, the most recent (clients' names are often made up per
run); one forgotten and seen again is streamed again."""

STREAM_INTERVAL: Final = 0.1
"""How long commits may wait to be streamed together when nothing told to a sender waits for
them (seconds). What may wait has another copy: a message's sender holds it until its receipt,
and who has an ``any`` message the members say at a takeover. Each batch wakes the passive
broker for a transaction: one every 10 ms cost an ``any`` round trip +40-50% p50 on 2 cores
shared by four processes, one every 100 ms +5% (docs/benchmarks.md)."""


class Replica:
    """One broker's side of the pair's journal: the stream out while active, the copy while not."""

    def __init__(self, standby: Standby, journal: Journal, sync: bool, epoch: bytes) -> None:
        self.standby = standby
        self.journal = journal
        self.sync = sync
        self.epoch = epoch
        self.active = False
        """Set when this broker starts to serve: from then on it streams and no longer follows."""
        self.seq = 0
        """The last commit streamed (active)."""
        self.acked = 0
        """The last commit the peer holds (active)."""
        self.source: tuple[bytes, int] = (b"", 0)
        """The active peer's (epoch, seq) this broker's journal holds (passive)."""
        self.alone = False
        """The peer was counted gone while commits waited for it (logged once)."""
        self.members: dict[str, str] = {}
        """Instances handed ``any`` work (instance -> name): streamed (active), or as streamed
        (passive)."""
        self.covered: dict[str, int] = {}
        """The commit that streamed each member (active)."""
        self.requesters: OrderedDict[str, int] = OrderedDict()
        """Names that sent ``any`` messages, with the commit that streamed each (active), or as
        streamed (passive)."""
        self.batch: Batch | None = None
        """Commits not streamed yet (active)."""
        self._batch_due = 0.0
        self._asked = float("-inf")
        self._next_position = 0.0
        standby.on_stream = self.receive
        journal.replica = self.committed

    # -- the active side ----------------------------------------------------------------------

    def committed(self, changes: Changes, urgent: bool = False) -> None:
        """The journal wrote a commit: fold it into the batch that goes next, streamed now when
        ``urgent`` or when it holds what has no other copy (active only; a passive broker writes
        nothing of its own)."""
        if not self.active:
            return
        if self.batch is None:
            self.batch = Batch()
            self._batch_due = time.monotonic() + STREAM_INTERVAL
        self.batch.fold(changes)
        if urgent or changes["letters"] or changes["dropped"] or changes["purge"] \
                or changes["names"]:
            self.flush()

    def flush(self) -> int:
        """Stream the batch now, if there is one; the last commit streamed."""
        if self.batch is not None:
            batch, self.batch = self.batch, None
            self._stream(batch.changes())
        return self.seq

    def barrier(self) -> int:
        """The commit what a sender is told now must wait for: with ``sync`` the batch goes out
        at once (without it, nothing waits for the peer)."""
        return self.flush() if self.sync else self.seq

    def next_flush(self) -> float | None:
        """When the batch falls due (monotonic seconds), for the loop's poll timeout."""
        return self._batch_due if self.batch is not None else None

    def member(self, instance: str, name: str, requester: str = "") -> int:
        """The commit the peer must hold before ``instance`` is handed an ``any`` message from
        ``requester``: the one that streams them, sent now the first time each is seen (after
        that, nothing to wait for)."""
        if not self.active:
            return 0
        changes = empty()
        if instance not in self.covered:
            changes["joined"] = [(instance, name)]
            self.members[instance] = name
        if requester and requester not in self.requesters:
            changes["requesters"] = [(requester,)]
        if changes["joined"] or changes.get("requesters"):  # else there is nothing to stream
            seq = self._stream(changes)
            self.covered.setdefault(instance, seq)
            if requester:
                self._requested(requester, seq)
        return max(self.covered[instance], self.requesters.get(requester, 0))

    def _requested(self, requester: str, seq: int) -> None:
        self.requesters.setdefault(requester, seq)
        self.requesters.move_to_end(requester)
        while len(self.requesters) > REQUESTERS_KEPT:
            self.requesters.popitem(last=False)

    def left(self, instance: str) -> None:
        """``instance`` is gone for good: the peer need not wait for it at a takeover."""
        if self.members.pop(instance, None) is not None and self.active:
            self.covered.pop(instance, None)
            changes = empty()
            changes["left"] = [(instance,)]
            self._stream(changes)

    def _stream(self, changes: Changes) -> int:
        self.seq += 1
        self.standby.send([COMMIT, self.epoch, b"%d" % self.seq, pack(changes)])
        return self.seq

    def holds(self, seq: int, now: float) -> bool:
        """May what waited on commit ``seq`` go out? Yes once the peer holds it, or without
        ``sync``, or when the peer is counted gone (the one line saying so comes here)."""
        if not self.sync or self.acked >= seq:
            return True
        if self.standby.peer_live(now):
            return False
        if not self.alone:
            self.alone = True
            log.warning("standby: the peer is silent: receipts go out unreplicated until it is "
                        "back and has caught up")
        return True

    def step(self, now: float) -> None:
        """The batch once it is due; once a heartbeat, the active broker's position: a passive
        peer that missed a commit asks again."""
        if self.batch is not None and now >= self._batch_due:
            self.flush()
        if self.active and now >= self._next_position:
            self._next_position = now + self.standby.heartbeat
            self.standby.send([POSITION, self.epoch, b"%d" % self.seq])

    # -- what the peer sent -------------------------------------------------------------------

    def receive(self, frames: list[bytes], now: float) -> None:
        """A message of the replica's from the peer; anything malformed is ignored."""
        tag = frames[0]
        try:
            if self.active:
                if tag == ACK and len(frames) == 3 and frames[1] == self.epoch:
                    self._acked(int(frames[2]))
                elif tag == RESEND:
                    self._send_snapshot()
            elif tag in (COMMIT, SNAPSHOT, POSITION) and len(frames) >= 3:
                self._follow(frames, int(frames[2]), now)
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("standby: ignored a malformed replica message %r: %s", tag[:8], exc)

    def _acked(self, seq: int) -> None:
        self.acked = max(self.acked, seq)
        if self.alone and self.acked >= self.seq:
            self.alone = False
            log.info("standby: the peer holds the journal again: receipts wait for it")

    def _send_snapshot(self) -> None:
        # its commit streams as J first: the S that follows covers it
        changes = self.journal.snapshot()
        self.flush()
        # the file's members and those streamed: a member may be in either alone
        changes["members"] = [*changes["members"], *self.members.items()]
        changes["requesters"] = [(name,) for name in self.requesters]
        self.covered = dict.fromkeys(self.members, self.seq)
        self.requesters = OrderedDict.fromkeys(self.requesters, self.seq)
        self.standby.send([SNAPSHOT, self.epoch, b"%d" % self.seq, pack(changes)])
        log.info("standby: sent the peer the whole journal (%d unsettled messages, "
                 "%d dead letters)", len(changes["puts"]), len(changes["letters"]))

    def _follow(self, frames: list[bytes], seq: int, now: float) -> None:
        tag, epoch = frames[0], frames[1]
        if tag == SNAPSHOT or tag == COMMIT and self.source == (epoch, seq - 1):
            changes = unpack(frames[3])
            try:
                self.journal.apply(changes)
            except sqlite3.Error as exc:
                log.error("standby: could not write the peer's journal here (%s); asking for all "
                          "of it again", exc)
                self._ask(now)
                return
            if tag == SNAPSHOT:
                log.info("standby: took the active peer's whole journal in place of this one's")
                self.members, self.requesters = {}, OrderedDict()
            self._follow_members(changes)
            self.source = (epoch, seq)
            self.standby.send([ACK, epoch, b"%d" % seq])
        elif self.source != (epoch, seq):
            self._ask(now)

    def _follow_members(self, changes: Changes) -> None:
        for instance, name in [*changes.get("members", ()), *changes.get("joined", ())]:
            self.members[str(instance)] = str(name)
        for (instance,) in changes.get("left", ()):
            self.members.pop(str(instance), None)
        for (requester,) in changes.get("requesters", ()):
            self._requested(str(requester), 0)

    def _ask(self, now: float) -> None:
        # one request a heartbeat: the answer is the whole journal
        if now >= self._asked + self.standby.heartbeat:
            self._asked = now
            self.standby.send([RESEND, self.epoch])  # two frames: one is a state
