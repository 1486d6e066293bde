"""The broker's delivery table on a clock the test controls: deadlines, touches, expiry."""

from __future__ import annotations

from robotlab.broker.deliveries import Deliveries
from robotlab.broker.dlq import DeadLetterQueue
from robotlab.broker.registry import Peer, Registry
from robotlab.bus.wire.protocol import Command

WALL = 1_000_000.0  # time.time() stand-in; the broker compares message deadlines with it


def table() -> tuple[Deliveries, Peer, list]:
    sent: list = []
    registry = Registry()
    bob = Peer(identity=b"b", name="bob", instance="bob-1", role="robot", max_inflight=8,
               expires=1e9, joined=0.0)
    alice = Peer(identity=b"a", name="alice", instance="alice-1", role="robot", max_inflight=8,
                 expires=1e9, joined=0.0)
    registry.add(bob)
    registry.add(alice)
    # transmit is the broker's socket seam: record the frames instead of sending them
    deliveries = Deliveries(registry, DeadLetterQueue(100), lambda peer, cmd, header,
                            body: sent.append((peer.name, cmd, header)) or True, ack_timeout=30.0)
    return deliveries, bob, sent


def route(deliveries: Deliveries, **header) -> int:
    deliveries.route({"id": "m1", "to": "bob", "from": "alice", "from_instance": "alice-1",
                      **header}, b"", notify="alice-1")
    return next(iter(deliveries.inflight))


def receipts(sent: list) -> list:
    return [header for name, cmd, header in sent if cmd == Command.RECEIPT]


def test_touch_pushes_the_deadline_by_another_ack_timeout() -> None:
    deliveries, bob, sent = table()
    delivery_id = route(deliveries)
    start = deliveries.inflight[delivery_id].deadline - 30.0
    deliveries.touch(bob, [delivery_id], now=start + 20.0, wall_now=WALL)
    deliveries.expire(start + 31.0)  # past the first deadline, not the touched one
    assert delivery_id in deliveries.inflight and receipts(sent) == []
    deliveries.expire(start + 50.5)
    assert delivery_id not in deliveries.inflight
    assert [r["status"] for r in receipts(sent)] == ["timeout"]


def test_touch_never_extends_past_the_message_deadline() -> None:
    deliveries, bob, sent = table()
    delivery_id = route(deliveries, deadline=WALL + 40.0)  # the sender waits 40 s in all
    start = deliveries.inflight[delivery_id].deadline - 30.0
    deliveries.touch(bob, [delivery_id], now=start + 25.0, wall_now=WALL + 25.0)
    assert deliveries.inflight[delivery_id].deadline == start + 40.0
    deliveries.expire(start + 40.5)
    assert [r["status"] for r in receipts(sent)] == ["timeout"]


def test_only_the_holder_can_touch() -> None:
    deliveries, bob, sent = table()
    delivery_id = route(deliveries)
    before = deliveries.inflight[delivery_id].deadline
    deliveries.touch(deliveries.registry.by_instance["alice-1"], [delivery_id, "junk", 999],
                     now=before - 1, wall_now=WALL)
    assert deliveries.inflight[delivery_id].deadline == before


def test_settled_deliveries_do_not_keep_their_deadline_entries_until_due() -> None:
    from robotlab.broker.deliveries import DEADLINE_SLACK

    deliveries, bob, sent = table()
    bob.max_inflight = 10
    kept = route(deliveries)  # stays in flight throughout: its deadline must survive every rebuild
    for i in range(3 * DEADLINE_SLACK):
        deliveries.route({"id": f"m{i + 2}", "to": "bob", "from": "alice",
                          "from_instance": "alice-1"}, b"", notify="alice-1")
        deliveries.ack(bob, max(deliveries.inflight))
    assert len(deliveries.inflight) == 1
    assert len(deliveries._deadlines) <= 2 + DEADLINE_SLACK + 1
    due = deliveries.inflight[kept].deadline
    deliveries.expire(due - 1.0)
    assert kept in deliveries.inflight
    deliveries.expire(due + 0.5)
    assert kept not in deliveries.inflight
    assert [r["status"] for r in receipts(sent) if r["id"] == "m1"] == ["timeout"]


def test_an_any_message_for_an_instance_whose_connection_is_gone_goes_to_another() -> None:
    sent: list = []
    registry = Registry()
    for instance in ("bob-1", "bob-2"):  # bob-1 first: with nothing in flight, it is picked
        registry.add(Peer(identity=instance.encode(), name="bob", instance=instance, role="robot",
                          max_inflight=8, expires=1e9, joined=0.0))
    registry.add(Peer(identity=b"a", name="alice", instance="alice-1", role="robot", max_inflight=8,
                      expires=1e9, joined=0.0))

    def transmit(peer: Peer, command: Command, header: dict, body: bytes) -> bool:
        if peer.instance == "bob-1":
            return False  # its connection is gone: the socket cannot route to it
        sent.append((peer.instance, command, header))
        return True

    dlq = DeadLetterQueue(100)
    deliveries = Deliveries(registry, dlq, transmit, ack_timeout=30.0)
    deliveries.route({"id": "m1", "to": "bob", "any": True, "from": "alice",
                      "from_instance": "alice-1"}, b"", notify="alice-1")
    # Never handed out to bob-1, so nothing ran there: it goes to bob-2, not to the dead-letter
    # queue
    assert [(instance, command) for instance, command, _ in sent] == [("bob-2", Command.DELIVER)]
    assert len(dlq) == 0
