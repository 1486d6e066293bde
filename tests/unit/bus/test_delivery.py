"""Delivery guarantees through the real broker code (embedded, over inproc://)."""

from __future__ import annotations

import threading

import pytest

from robotlab import bus
from robotlab.bus.wire import protocol
from robotlab.errors import BusError, Busy, DeliveryTimeout, Nacked, ReplyTimeout, Undeliverable
from tests.waiting import wait_until


def collector(client: bus.BusClient) -> list:
    seen: list = []
    client.on_message(lambda m: seen.append(m.content))
    return seen


def test_connect_without_url_runs_an_embedded_broker() -> None:
    with bus.connect(name="alice") as alice:
        assert alice.url.startswith("inproc://")
        with bus.connect(alice.url, name="bob") as bob:
            bob.on_message(lambda m: m.content.upper())
            assert alice.request("bob", "hi", timeout=5).content == "HI"


def test_fan_out_reaches_every_instance_and_any_reaches_one(member) -> None:
    alice, bob1, bob2 = member("alice"), member("bob"), member("bob")
    seen1, seen2 = collector(bob1), collector(bob2)
    tracker = alice.send("bob", "all").wait(5)
    assert sorted(tracker.instances) == sorted([bob1.instance, bob2.instance])
    wait_until(lambda: seen1 == ["all"] and seen2 == ["all"], message="both copies handled")
    alice.send("bob", "one", any=True).wait(5)
    wait_until(lambda: len(seen1) + len(seen2) == 3, message="one more copy")
    assert (seen1 + seen2).count("one") == 1


def test_undeliverable_is_dead_lettered_and_the_sender_told(member) -> None:
    alice = member("alice")
    with pytest.raises(Undeliverable) as info:
        alice.send("nobody", {"x": 1}).wait(5)
    assert info.value.dlq_id
    letters = alice.admin("dlq.list")
    assert [(d["dlq_id"], d["reason"], d["to"]) for d in letters] == [(info.value.dlq_id,
                                                                       "undeliverable", "nobody")]
    assert protocol.unpack(letters[0]["body"]) == {"x": 1}


def test_a_handler_that_raises_nacks_with_its_message(member) -> None:
    alice, bob = member("alice"), member("bob")
    bob.on_message(lambda m: (_ for _ in ()).throw(ValueError("not today")))
    with pytest.raises(Nacked, match="ValueError: not today"):
        alice.request("bob", "hi", timeout=5)
    assert alice.admin("dlq.list")[0]["reason"] == "nacked"


def test_unacked_delivery_times_out_into_the_dlq(member) -> None:
    alice = member("alice", ack_timeout=0.3)
    bob = member("bob")
    bob.on_message(lambda delivery, message: None, manual=True)  # never settles
    with pytest.raises(DeliveryTimeout, match="did not ack within 0.3s"):
        alice.send("bob", "x").wait(5)
    assert alice.admin("dlq.list")[0]["reason"] == "timeout"


def test_a_dead_letter_says_whether_its_work_may_have_run_and_such_a_replay_must_be_forced(
        member) -> None:
    alice = member("alice", ack_timeout=0.3)
    bob = member("bob")
    runs: list[str] = []
    # runs, never acks
    bob.on_message(lambda delivery, message: runs.append(message.content), manual=True)
    with pytest.raises(DeliveryTimeout):
        alice.send("bob", "charge the card").wait(5)
    with pytest.raises(Undeliverable):
        alice.send("nobody", "never handed out").wait(5)
    letters = {d["to"]: d for d in alice.admin("dlq.list")}
    assert (letters["bob"]["maybe_ran"], letters["nobody"]["maybe_ran"]) == (True, False)
    # Replaying what may have run is refused, and the letter stays; forced, it runs again
    with pytest.raises(BusError, match="may have run already.*--force"):
        alice.replay(letters["bob"]["dlq_id"])
    assert {d["dlq_id"] for d in alice.admin("dlq.list")} == {letters["bob"]["dlq_id"],
                                                              letters["nobody"]["dlq_id"]}
    with pytest.raises(DeliveryTimeout):
        alice.replay(letters["bob"]["dlq_id"], force=True).wait(5)
    assert runs == ["charge the card", "charge the card"]


def test_a_copy_that_timed_out_is_not_hidden_behind_a_busy_one(member) -> None:
    alice = member("alice", ack_timeout=0.3)
    full, silent = member("bob", max_inflight=1), member("bob")
    held: list = []
    full.on_message(lambda delivery, message: held.append(delivery), manual=True)
    silent.on_message(lambda delivery, message: None, manual=True)  # takes it, never acks
    alice.send("bob", "fills the first instance", to_instance=full.instance)
    wait_until(lambda: held, message="the first instance is full")
    # To every instance of bob: one copy refused for room, the other never acked. Not "busy"
    # (a resend would reach only the first, and the sender would hear "delivered"), but the
    # time-out, naming both copies, each dead-lettered.
    to_both = alice.send("bob", "to both", busy_retry=5)
    with pytest.raises(DeliveryTimeout, match="in flight.*did not ack|did not ack.*in flight"):
        to_both.wait(5)
    assert {(copy[0], copy[1]) for copy in to_both.failed_copies} == {(full.instance, "busy"),
                                                                      (silent.instance, "timeout")}
    letters = [d for d in alice.admin("dlq.list") if protocol.unpack(d["body"]) == "to both"]
    assert sorted((d["reason"], d["maybe_ran"]) for d in letters) == [("busy", False),
                                                                      ("timeout", True)]


def test_in_flight_bound_answers_busy_instead_of_queueing(member) -> None:
    alice = member("alice")
    bob = member("bob", max_inflight=1)
    held: list = []
    bob.on_message(lambda delivery, message: held.append(delivery), manual=True)
    first = alice.send("bob", 1)
    wait_until(lambda: held, message="first delivery held")
    with pytest.raises(Busy, match="1 deliveries in flight"):
        alice.send("bob", 2, busy_retry=0).wait(5)
    retried = alice.send("bob", 3, busy_retry=5)  # backpressure: resent until there is room
    held[0].ack()
    assert first.wait(5).status == "delivered"
    wait_until(lambda: len(held) == 2, message="the retried message arrives once there is room")
    held[1].ack()
    assert retried.wait(5).status == "delivered"
    assert alice.admin("dlq.list") == []  # busy is the sender's to retry, not a dead letter


def test_idempotent_message_is_redelivered_to_another_instance_after_a_nack(member) -> None:
    alice, grumpy, happy = member("alice"), member("bob"), member("bob")
    grumpy.on_message(lambda m: (_ for _ in ()).throw(RuntimeError("grumpy")))
    happy.on_message(lambda m: f"ok from {m.attempt}")
    reply = alice.request("bob", "job", any=True, idempotent=True, timeout=5)
    assert reply.content == "ok from 2"
    assert reply.sender_instance == happy.instance


def test_manual_delivery_settles_once() -> None:
    with bus.connect(name="alice") as alice, bus.connect(alice.url, name="bob") as bob:
        errors: list = []

        def handler(delivery, message):
            delivery.ack()
            try:
                delivery.nack("again")
            except RuntimeError as exc:
                errors.append(str(exc))

        bob.on_message(handler, manual=True)
        alice.send("bob", "x").wait(5)
        wait_until(lambda: errors, message="second settle refused")
        assert errors == ["Delivery already resolved as acked"]


def test_a_resent_message_runs_the_handler_once(member) -> None:
    alice, bob = member("alice"), member("bob")
    seen = collector(bob)
    tracker = alice.send("bob", "once")
    tracker.wait(5)
    frames = protocol.encode(protocol.Command.SEND,
                             {"id": tracker.id, "to": "bob", "type": "message"},
                             protocol.pack("once"))
    alice._link.post(frames)  # the same message again, as a resend after a reconnect would be
    alice.send("bob", "next").wait(5)
    wait_until(lambda: "next" in seen, message="later message handled")
    assert seen == ["once", "next"]


def test_reply_timeout_says_what_became_of_the_request(member) -> None:
    alice, bob = member("alice"), member("bob")
    bob.on_message(lambda m: None)  # acks, never replies
    with pytest.raises(ReplyTimeout, match="delivered and acked by .* but no reply came"):
        alice.request("bob", "hello?", timeout=0.5)


def test_oversized_message_is_refused_in_the_sender(make_broker) -> None:
    broker = make_broker(max_message_bytes=4096)
    with bus.connect(broker.url, name="alice") as alice:
        with pytest.raises(BusError, match="exceeds the broker's limit of 4096"):
            alice.send("bob", "x" * 5000)


def test_many_threads_send_without_losing_or_duplicating(member) -> None:
    alice, bob = member("alice"), member("bob")
    seen = collector(bob)
    trackers: list = []
    lock = threading.Lock()

    def burst(n: int) -> None:
        for i in range(50):
            t = alice.send("bob", f"{n}-{i}")
            with lock:
                trackers.append(t)

    threads = [threading.Thread(target=burst, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(t.wait(10).status == "delivered" for t in trackers)
    assert len({t.id for t in trackers}) == 400
    wait_until(lambda: len(seen) == 400, message="all 400 handled")
    assert len(set(seen)) == 400


def test_a_live_receiver_working_longer_than_the_ack_timeout_is_not_timed_out(member) -> None:
    alice = member("alice", ack_timeout=1.0)
    bob = member("bob")
    bob.on_message(lambda m: threading.Event().wait(2.5) or f"done {m.content}")  # 2.5 ack timeouts
    assert alice.request("bob", "long job", timeout=5).content == "done long job"
    assert alice.admin("dlq.list") == []


def test_the_message_in_hand_when_the_receiver_drains_is_still_touched(member) -> None:
    # Given a receiver that is running a message when it starts to drain (SIGTERM does this)
    alice = member("alice", ack_timeout=1.0)
    bob = member("bob")
    started = threading.Event()
    bob.on_message(lambda m: started.set() or threading.Event().wait(2.5) or f"done {m.content}")
    tracker = alice.send_request("bob", "job")
    wait_until(started.is_set, message="bob runs the job")
    # When the drain waits for it longer than the ack timeout
    bob.dispatcher.stop(drain=10)
    # Then the broker kept waiting: the reply arrives and nothing was dead-lettered
    assert tracker.reply(5).content == "done job"
    assert alice.admin("dlq.list") == []


def test_a_deliver_carries_the_senders_fields_but_not_the_brokers_own() -> None:
    from robotlab.broker.records import deliver_header

    send = {"id": "a.1", "to": "bob", "type": "reply", "reply_to": "b.7", "to_instance": "bob-1",
            "untracked": True,
            "ack": 12, "receipt": False, "any": True, "idempotent": True, "max_handling": 5.0,
            "hold": 1.0,
            "deadline": 99.5, "from": "alice", "from_instance": "alice-1", "newer_field": [1]}
    deliver = deliver_header(send, 0, 1)
    assert deliver == {"id": "a.1", "to": "bob", "type": "reply", "reply_to": "b.7",
                       "deadline": 99.5, "from": "alice",
                       "from_instance": "alice-1", "newer_field": [1], "delivery": 0, "attempt": 1}
    # the record keeps what the broker acts on
    assert send["to_instance"] == "bob-1" and send["ack"] == 12
    protocol.check_header(protocol.Command.DELIVER, deliver)
