"""A standby pair's journal replica, with real journals and the pair's real state sockets
(inproc)."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest
import zmq

from robotlab.broker.journal import Journal
from robotlab.broker.replica import Replica
from robotlab.broker.standby import Standby
from tests.waiting import wait_until

HEARTBEAT = 0.05


@pytest.fixture
def pair(tmp_path: Path):
    """An active replica and a following one, each with its standby sockets and journal file."""
    name = uuid.uuid4().hex[:8]
    context = zmq.Context.instance()
    sides = []
    for me, peer, role in (("a", "b", "primary"), ("b", "a", "backup")):
        standby = Standby(role, f"inproc://{name}-{me}", f"inproc://{name}-{peer}", HEARTBEAT,
                          context, 0.0)
        journal = Journal(str(tmp_path / f"{me}.db"), 64 * 1024 * 1024)
        sides.append(Replica(standby, journal, sync=True, epoch=me.encode()))
    active, follower = sides
    active.active = True
    yield active, follower
    for side in sides:
        side.standby.close()
        side.journal.close()


def pump(*sides: Replica) -> None:
    """One loop turn of each broker: read the peer, publish the position when due."""
    for side in sides:
        side.standby.step(side.standby.peer_expiry - 1)  # the peer counts as live
        side.step(float("inf"))


def test_a_commit_reaches_the_follower_s_journal_with_its_owner_and_is_acked(pair) -> None:
    active, follower = pair
    # Given an accepted `any` message handed to an instance, committed on the active side
    key = ("alice-1", "m1")
    active.journal.put(key, {"id": "m1", "to": "bob", "from": "alice", "any": True}, b"body",
                       "alice-1", "m1")
    active.journal.owned(key, "bob-2")
    assert active.journal.commit(everything=True)  # it outlived the interval: written
    seq = active.barrier()  # a receipt waits for it: the batch goes out now
    active.standby.heard, active.standby.peer_expiry = True, 10.0
    assert not active.holds(seq, now=0.0)  # the peer is live and has not got it: receipts wait

    # When the two exchange what they publish (the follower, new, asks for everything and gets it)
    wait_until(lambda: (pump(active, follower), active.acked >= seq)[1], timeout=5,
               message="the commit acked")

    # Then the follower's journal holds the message with its owner, and the receipts may go
    assert active.holds(seq, now=0.0)
    (header, body, notify, got, receipt_id, owner, _), = follower.journal.restore().messages
    assert (got, bytes(body), owner, header["to"]) == (key, b"body", "bob-2", "bob")

    # And a settle is streamed as one more commit, applied in order
    active.journal.settle(key)
    assert active.journal.commit()
    wait_until(lambda: (pump(active, follower), active.acked == active.seq)[1], timeout=5,
               message="the settle acked")
    assert follower.journal.restore().messages == []


def test_a_silent_peer_releases_what_waits_with_one_line(pair, caplog) -> None:
    active, follower = pair
    active.journal.name_seen("bob")
    assert active.journal.commit()
    active.standby.heard, active.standby.peer_expiry = True, 10.0
    assert not active.holds(active.barrier(), now=9.0)
    with caplog.at_level(logging.WARNING, logger="robotlab.broker"):
        assert active.holds(active.seq, now=10.5) and active.holds(active.seq, now=11.0)
    assert [r.message for r in caplog.records].count(
        "standby: the peer is silent: receipts go out unreplicated until it is back and has caught "
        "up") == 1


def test_without_sync_nothing_waits(pair) -> None:
    active, _ = pair
    active.sync = False
    active.journal.put(("alice-1", "m1"), {"id": "m1", "to": "bob", "from": "alice"}, b"body",
                       "alice-1", "m1")
    assert active.journal.commit(everything=True)
    assert active.batch is not None and active.barrier() == 0  # nothing is sent for it
    active.standby.heard, active.standby.peer_expiry = True, 10.0
    assert active.holds(active.barrier(), now=0.0)


def test_a_name_seen_is_streamed_at_once(pair) -> None:
    active, _ = pair
    active.journal.name_seen("bob")
    assert active.journal.commit()
    assert active.batch is None and active.seq == 1


def test_a_message_put_and_settled_within_one_batch_never_reaches_the_peer(pair) -> None:
    active, follower = pair
    wait_until(lambda: (pump(active, follower), follower.source == (b"a", active.seq))[1],
               timeout=5, message="the follower has the whole journal")
    streamed = active.seq
    # Given an `any` message written with its owner, then answered, in two commits
    key = ("alice-1", "m1")
    active.journal.put(key, {"id": "m1", "to": "bob", "from": "alice", "any": True},
                       b"x" * 1000, "alice-1", "m1")
    active.journal.owned(key, "bob-2")
    assert active.journal.commit(everything=True)
    active.journal.settle(key)
    active.journal.answered(key, "bob-2")
    assert active.journal.commit(everything=True)

    # When the batch falls due, it is one commit to the peer
    assert active.batch is not None and active.batch.commits == 2
    assert active.batch.changes()["puts"] == [] and active.batch.changes()["owners"] == []
    wait_until(lambda: (pump(active, follower), active.acked == active.seq)[1], timeout=5,
               message="the batch acked")
    assert active.seq == streamed + 1

    # Then the peer holds what the active file holds: no message, and who answered it
    assert follower.journal.restore().messages == []
    assert follower.journal.restore().answered == {key: "bob-2"}
