"""Holds through the real broker code (embedded, over inproc://): a member away is waited for."""

from __future__ import annotations

import pytest

from robotlab import bus
from robotlab.broker.holds import Holds
from robotlab.bus.wire.protocol import Command
from robotlab.errors import Busy, DeliveryTimeout, Undeliverable
from tests.hostile import Raw
from tests.waiting import wait_until


def robots(client: bus.BusClient, name: str) -> list:
    return [row for row in client.admin("ps") if row["name"] == name]


def test_a_held_message_is_dead_lettered_when_its_hold_runs_out(make_broker) -> None:
    broker = make_broker(hold=30.0)
    with bus.connect(broker.url, name="bob"):
        pass  # bob is known from now on
    with bus.connect(broker.url, name="alice") as alice:
        tracker = alice.send("bob", "short", hold=0.3)  # the message's own hold wins
        assert not tracker.settled
        with pytest.raises(Undeliverable, match="came back while it was held"):
            tracker.wait(5)


def test_a_silent_member_back_with_its_instance_id_gets_its_work_again(make_broker) -> None:
    broker = make_broker(hold=30.0, ack_timeout=5.0)
    with bus.connect(broker.url, name="alice") as alice:
        first = bus.connect(broker.url, name="bob", instance="bob-1", role="robot")
        first.on_message(lambda delivery, message: None, manual=True)  # takes it, never settles
        tracker = alice.send("bob", "finish me")
        wait_until(lambda: robots(alice, "bob") and robots(alice, "bob")[0]["in_flight"] == 1,
                   message="in flight")
        first.close(bye=False, drain=0)  # no BYE: to the broker, bob just went silent
        wait_until(lambda: not robots(alice, "bob"), message="the broker noticed bob is gone")
        assert not tracker.settled  # held for bob, not failed

        seen: list = []
        again = bus.BusClient(broker.url, name="bob", instance="bob-1", role="robot")
        # the same member: it proves it with its token
        again._link.hello["token"] = first._link.hello["token"]
        with again.on_message(lambda m: seen.append(m.content)).start():
            tracker.wait(5)
    assert seen == ["finish me"] and tracker.instances == ["bob-1"]


def test_a_new_process_claiming_a_silent_members_instance_does_not_inherit_its_work(
        make_broker) -> None:
    broker = make_broker(hold=30.0)
    with bus.connect(broker.url, name="alice") as alice:
        first = bus.connect(broker.url, name="bob", instance="bob-1", role="robot")
        first.on_message(lambda delivery, message: None, manual=True)
        tracker = alice.send("bob", "whose is it")
        wait_until(lambda: robots(alice, "bob") and robots(alice, "bob")[0]["in_flight"] == 1,
                   message="in flight")
        first.close(bye=False, drain=0)
        wait_until(lambda: not robots(alice, "bob"), message="the broker noticed bob is gone")
        # another token: not the same member
        with bus.connect(broker.url, name="bob", instance="bob-1", role="robot"):
            with pytest.raises(DeliveryTimeout, match="a new process took its instance id"):
                tracker.wait(5)


def test_a_silent_member_that_stays_away_fails_its_work_when_the_hold_runs_out(make_broker) -> None:
    broker = make_broker(hold=0.5)
    with bus.connect(broker.url, name="alice") as alice:
        bob = bus.connect(broker.url, name="bob", role="robot")
        bob.on_message(lambda delivery, message: None, manual=True)
        tracker = alice.send("bob", "lost cause")
        wait_until(lambda: robots(alice, "bob") and robots(alice, "bob")[0]["in_flight"] == 1,
                   message="in flight")
        bob.close(bye=False, drain=0)
        with pytest.raises(DeliveryTimeout,
                           match="(went silent|disconnected).* and stayed away 0.5s"):
            tracker.wait(10)
        assert [d["reason"] for d in alice.admin("dlq.list")] == ["timeout"]


def test_a_broker_without_a_journal_holds_no_more_than_its_bound_and_says_so(make_broker) -> None:
    # Given a broker that keeps everything in memory, bounded at 1 MiB, and a robot away
    broker = make_broker(hold=30.0, journal_max_bytes=1024 * 1024)
    with bus.connect(broker.url, name="bob"):
        pass  # bob is known from now on, so what comes for him is held
    with bus.connect(broker.url, name="alice") as alice:
        # When a sender keeps sending him large messages
        big = "x" * 300_000
        held = [alice.send("bob", big) for _ in range(3)]
        # Then the fourth is turned away busy, saying why, and the three held stay held
        with pytest.raises(Busy, match="unsettled messages in memory as it may"):
            alice.send("bob", big, busy_retry=0).wait(5)
        stats = alice.admin("stats")
        assert not any(tracker.settled for tracker in held)
    assert stats["held"] == 3 and stats["journal_full"] >= 1
    # And once bob is back and takes them, there is room again
    seen: list = []
    with bus.BusClient(broker.url, name="bob").on_message(seen.append).start():
        wait_until(lambda: len(seen) == 3, message="bob took the three held messages")
        with bus.connect(broker.url, name="alice") as alice:
            assert alice.send("bob", big, busy_retry=0).wait(5).status == "delivered"


def test_headers_a_sender_filled_count_against_the_bound(make_broker) -> None:
    # Given a broker without a journal bounded at 1 MiB, bob away, and a hostile local process
    # that sends him messages with empty bodies and headers filled with a field of its own
    broker = make_broker(hold=30.0, journal_max_bytes=1024 * 1024)
    with bus.connect(broker.url, name="bob"):
        pass
    deliveries = broker._broker.deliveries
    raw = Raw(broker.url, broker.context)
    try:
        assert raw.hello("mallory", "mallory-1").command == Command.WELCOME
        for n in range(100):
            raw.send(Command.SEND, {"id": f"m{n}", "to": "bob", "padding": "x" * 60_000})
        wait_until(lambda: len(deliveries.active) + deliveries.counters["journal_full"] == 100,
                   message="each of the hundred held or turned away")
        busy = [raw.expect(Command.RECEIPT) for _ in range(deliveries.counters["journal_full"])]
    finally:
        raw.close()
    # Then what it holds for bob stays within the bound, and the rest was answered busy: counted
    # by their bodies alone (empty) all hundred would have been held, 6 MB of headers
    assert 10 <= len(deliveries.active) < 20
    assert broker._broker.journal.size <= 1024 * 1024
    assert {receipt.header["status"] for receipt in busy} == {"busy"}


def test_the_names_expected_back_are_bounded_and_those_seen_longest_ago_go() -> None:
    # Given room for three names (a broker's is KNOWN_MAX), and a, b and c seen in that order
    holds: Holds[object, object] = Holds(30.0, known_max=3)
    for name in ("a", "b", "c"):
        assert holds.know(name)
    # When a is seen again, then a fourth name
    assert not holds.know("a")
    assert holds.know("d")
    # Then b, seen longest ago, is forgotten: what comes for it fails at once, not held
    assert list(holds.known) == ["c", "a", "d"] and holds.forgotten == 1
    assert holds.until({"to": "b"}, 0.0) is None
    assert holds.until({"to": "a"}, 0.0) == 30.0
