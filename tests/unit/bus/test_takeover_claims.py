"""A standby takeover where the backup's journal lacks owners: the active broker handed `any`
messages out without waiting for its peer to hold who has each, so the members say so
themselves when they come back, and nothing is handed to another instance before they have.
Real journals, delivery tables and the pair's real state sockets (inproc)."""

from __future__ import annotations

import uuid
from pathlib import Path

import zmq

from robotlab.broker.claims import Claims, keys
from robotlab.broker.deliveries import Deliveries
from robotlab.broker.dlq import DeadLetterQueue
from robotlab.broker.holds import Holds
from robotlab.broker.journal import Journal
from robotlab.broker.registry import Peer, Registry
from robotlab.broker.releases import expire_holds, release
from robotlab.broker.replica import Replica
from robotlab.broker.restart import restore
from robotlab.broker.standby import Standby
from robotlab.bus.wire.protocol import Command, pack
from tests.waiting import wait_until

HOLD = 30.0


def peer(name: str, instance: str) -> Peer:
    return Peer(identity=instance.encode(), name=name, instance=instance, role="robot",
                max_inflight=8, expires=1e9, joined=0.0)


def request(message_id: str, to: str = "bob", again: bool = False) -> dict:
    """alice's `any` request; ``again``: sent again after a reconnect (the client marks it)."""
    header = {"id": message_id, "to": to, "any": True, "from": "alice", "from_instance": "alice-1"}
    return {**header, "again": True} if again else header


def taken_over(tmp_path: Path, ids: list[str], members: dict[str, str]) -> tuple[Deliveries,
                                                                                 Registry, list]:
    """The backup after a takeover: its journal holds ``ids`` (alice's `any` requests to bob)
    with no owner, as when the owners' commits had not reached it; ``members`` were streamed."""
    journal = Journal(str(tmp_path / "backup.db"), 1 << 20)
    for message_id in ids:
        journal.put(("alice-1", message_id), request(message_id), message_id.encode(), "alice-1",
                    message_id)
    assert journal.commit(everything=True)
    registry, sent, holds = Registry(), [], Holds(HOLD)

    # the broker's socket seam
    def handed(to: Peer, command: Command, header: dict, body: bytes) -> bool:
        if command == Command.DELIVER:
            sent.append((to.instance, bytes(body)))
        return True

    deliveries = Deliveries(registry, DeadLetterQueue(100), handed, 30.0, journal=journal,
                            holds=holds, deliver=handed)
    restore(journal.restore(), deliveries.dlq, holds, deliveries, journal.path, members)
    return deliveries, registry, sent


def hello(deliveries: Deliveries, registry: Registry, member: Peer,
          claimed: list[tuple[str, str]]) -> None:
    """What admission does with a HELLO after a takeover: register, read the claims, release."""
    registry.add(member)
    assert deliveries.claims is not None
    deliveries.claims.joined(member.name, member.instance, pack(claimed) if claimed else b"")
    release(deliveries, member.name, 0.0)


def test_nothing_goes_to_another_instance_before_the_members_that_were_live_said_what_they_hold(
        tmp_path: Path) -> None:
    # Given a takeover whose journal has m1, m2, m3 with no owner, and bob-1 and bob-2 streamed as
    # members
    deliveries, registry, sent = taken_over(tmp_path, ["m1", "m2", "m3"],
                                            {"bob-1": "bob", "bob-2": "bob"})
    try:
        # When bob-2 comes back first, saying it had m2
        hello(deliveries, registry, peer("bob", "bob-2"), [("alice-1", "m2")])
        # Then it gets m2 back (its dedupe answers it), and nothing else: bob-1 may have m1 or m3
        assert sent == [("bob-2", b"m2")]

        # When alice sends m4 again (never journaled here) while bob-1 is still away
        deliveries.route(request("m4", again=True), b"m4", notify="alice-1")
        # Then it waits too
        assert sent == [("bob-2", b"m2")]
        # But a message she sends for the first time cannot be with anyone: it goes at once
        deliveries.route(request("m5"), b"m5", notify="alice-1")
        assert sent == [("bob-2", b"m2"), ("bob-2", b"m5")]

        # When bob-1 comes back saying it had m1 and m4
        hello(deliveries, registry, peer("bob", "bob-1"), [("alice-1", "m1"), ("alice-1", "m4")])
        # Then those go back to it, and m3, which nobody had, goes out now to one of them
        by_message = {body.decode(): instance for instance, body in sent}
        assert (by_message["m1"], by_message["m4"], by_message["m2"]) == ("bob-1", "bob-1", "bob-2")
        assert by_message["m3"] in ("bob-1", "bob-2") and len(sent) == 5
        assert deliveries.claims is not None and not deliveries.claims.open("bob")

        # And a resend after the window closed still goes to the member that claimed it
        deliveries.active.clear()
        deliveries.route(request("m1"), b"m1 again", notify="alice-1")
        assert sent[-1] == ("bob-1", b"m1 again")
    finally:
        deliveries.journal.close()


def test_claims_count_only_from_a_streamed_member_for_its_own_name(tmp_path: Path) -> None:
    deliveries, registry, sent = taken_over(tmp_path, ["m1"], {"bob-1": "bob", "eve-1": "eve"})
    try:
        claims = deliveries.claims
        assert claims is not None
        # A member of another name, an instance nobody streamed, and garbage claim nothing
        hello(deliveries, registry, peer("eve", "eve-1"), [("alice-1", "m1")])
        registry.add(peer("bob", "bob-9"))
        assert not claims.joined("bob", "bob-9", pack([["alice-1", "m1"]]))
        # bob-1 saying HELLO as eve
        assert not claims.joined("eve", "bob-1", pack([["alice-1", "m1"]]))
        for garbage in (b"\xc1", pack({"a": 1}), pack([[1, 2]]), pack([["x" * 1000, "m1"]]),
                        b"\x00" * 10):
            assert keys(garbage) == []
        release(deliveries, "bob", 0.0)
        # m1 waits for bob-1, the one streamed member of bob
        assert sent == [] and claims.open("bob")
        # When bob-1 comes back without it, m1 goes out (to bob-9, the least loaded, or bob-1)
        hello(deliveries, registry, peer("bob", "bob-1"), [])
        assert [body for _, body in sent] == [b"m1"]
    finally:
        deliveries.journal.close()


def test_the_window_closes_when_the_hold_runs_out(tmp_path: Path) -> None:
    deliveries, registry, sent = taken_over(tmp_path, [], {"bob-1": "bob", "bob-2": "bob"})
    try:
        assert deliveries.claims is not None
        deliveries.claims.until = 5.0
        hello(deliveries, registry, peer("bob", "bob-2"), [])
        deliveries.route(request("m5", again=True), b"m5", notify="alice-1")
        assert sent == []
        expire_holds(deliveries, 5.0)  # bob-1 never came back within the hold
        assert sent == [("bob-2", b"m5")] and deliveries.claims is None
    finally:
        deliveries.journal.close()


def test_no_window_without_members_or_without_a_hold() -> None:
    assert Claims.of({}, HOLD, 0.0) is None
    assert Claims.of({"bob-1": "bob"}, 0.0, 0.0) is None


def test_the_active_side_streams_each_member_once_and_the_passive_side_keeps_them(
        tmp_path: Path) -> None:
    name, context = uuid.uuid4().hex[:8], zmq.Context.instance()
    sides = []
    for me, other, role in (("a", "b", "primary"), ("b", "a", "backup")):
        standby = Standby(role, f"inproc://{name}-{me}", f"inproc://{name}-{other}", 0.05, context,
                          0.0)
        sides.append(Replica(standby, Journal(str(tmp_path / f"{me}.db"), 1 << 20), sync=True,
                             epoch=me.encode()))
    active, follower = sides
    active.active = True

    def pump() -> None:
        for side in sides:
            side.standby.step(side.standby.peer_expiry - 1)
            side.step(float("inf"))

    try:
        active.standby.heard, active.standby.peer_expiry = True, 10.0
        # The first hand-out to bob-1 waits for the record of bob-1 on the peer; later ones do not
        seq = active.member("bob-1", "bob")
        assert seq > 0 and not active.holds(seq, now=0.0)
        wait_until(lambda: (pump(), active.acked >= seq)[1], timeout=5, message="the member acked")
        assert active.member("bob-1", "bob") == seq and active.holds(seq, now=0.0)
        assert active.seq == seq  # and nothing more was streamed for it
        assert follower.members == {"bob-1": "bob"}
        # A member gone for good is no longer waited for; a snapshot carries every member
        active.member("bob-2", "bob")
        active.left("bob-1")
        wait_until(lambda: (pump(), follower.members == {"bob-2": "bob"})[1], timeout=5,
                   message="bob-1 left")
        follower.members.clear()
        # lost track: it asks for everything
        follower.source, follower._asked = (b"", 0), float("-inf")
        wait_until(lambda: (pump(), follower.members == {"bob-2": "bob"})[1], timeout=5,
                   message="the snapshot")
    finally:
        for side in sides:
            side.standby.close()
            side.journal.close()


def test_the_outbox_sends_a_handout_once_the_local_commit_is_done(tmp_path: Path) -> None:
    # A DELIVER to a member the peer already holds waits for no ack of the owner's commit
    from robotlab.broker.outbox import Outbox

    name, context = uuid.uuid4().hex[:8], zmq.Context.instance()
    standby = Standby("primary", f"inproc://{name}-a", f"inproc://{name}-b", 0.05, context, 0.0)
    journal = Journal(str(tmp_path / "a.db"), 1 << 20)
    replica = Replica(standby, journal, sync=True, epoch=b"a")
    replica.active, standby.heard, standby.peer_expiry = True, True, 10.0
    registry, sent = Registry(), []
    bob = peer("bob", "bob-1")
    registry.add(bob)
    outbox = Outbox(journal, registry, lambda to, command, header,
                    body: sent.append(command) or True)
    outbox.replica = replica
    try:
        # the peer holds bob-1 already
        replica.seq, replica.covered["bob-1"], replica.acked = 5, 3, 3
        journal.name_seen("bob")  # the turn commits something
        outbox.add(bob, Command.DELIVER, {"id": "m1"})
        outbox.add(bob, Command.RECEIPT, {"id": "m0"})
        outbox.end_turn(0.0)
        assert sent == [Command.DELIVER]  # the receipt still waits for the peer's ack of the commit
    finally:
        standby.close()
        journal.close()


def test_a_member_s_hello_claims_the_newest_messages_it_had_that_fit_the_broker_s_limit() -> None:
    from robotlab import bus
    from robotlab.bus.member.dispatcher import CLAIM_BYTES
    from robotlab.bus.wire import protocol

    # Given a forged broker (a bare ROUTER) that welcomes bob with a 2 KiB limit and hands him 20
    # messages
    url, got = f"inproc://claims-{uuid.uuid4().hex[:8]}", []
    router = zmq.Context.instance().socket(zmq.ROUTER)
    router.bind(url)
    client = bus.BusClient(url, name="bob", context=zmq.Context.instance())
    client.on_message(lambda message: got.append(message.id))

    def next_hello() -> tuple[bytes, protocol.Frame]:
        while True:
            assert router.poll(5000), "no HELLO came"
            identity, *frames = router.recv_multipart()
            frame = protocol.decode(frames)
            if frame.command == Command.HELLO:
                return identity, frame

    try:
        client.start(timeout=None)
        identity, first = next_hello()
        assert first.body == b""  # nothing had yet
        welcome = {"heartbeat": 0.05, "liveness": 3, "max_message_bytes": 2048}
        router.send_multipart([identity, *protocol.encode(Command.WELCOME, welcome)])
        assert client.wait_connected(5)
        for i in range(20):
            header = {"id": f"m{i}", "to": "bob", "type": "message", "delivery": i + 1,
                      "from": "alice", "from_instance": "alice-1", "attempt": 1}
            router.send_multipart([identity, *protocol.encode(Command.DELIVER, header,
                                                              protocol.pack(i))])
        wait_until(lambda: len(got) == 20, timeout=5, message="bob handled all 20")

        # When the broker goes silent and bob says HELLO again
        _, again = next_hello()

        # Then its body claims the newest of them, as many as surely fit in half the limit
        claimed = keys(again.body)
        assert claimed == [("alice-1", f"m{i}") for i in range(20 - 1024 // CLAIM_BYTES, 20)]
    finally:
        client.close()
        router.close(linger=0)
