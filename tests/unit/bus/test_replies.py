"""Replies through the real broker code (embedded, over inproc://): packed once, cached as sent,
and checked before they take over the ack of the message they answer."""

from __future__ import annotations

import time
import uuid

import pytest

from robotlab import bus
from robotlab.bus import BrokerConfig, EmbeddedBroker
from robotlab.bus.wire import protocol
from robotlab.errors import DeliveryFailed, Nacked, ReplyTimeout
from tests.waiting import wait_until


def test_a_reply_the_broker_would_refuse_leaves_its_request_to_be_nacked_at_once(member) -> None:
    alice, bob = member("alice", ack_timeout=60.0), member("bob")

    def handler(delivery, message) -> None:
        bob.reply(message, "ok", type="t" * (protocol.NAME_MAX + 1))  # raises: the type is too long

    bob.on_message(handler, manual=True)
    # The ack stays with the delivery, so the handler's failure nacks it now, not at the ack
    # timeout.
    with pytest.raises(Nacked, match="ProtocolError: SEND header field 'type'"):
        alice.request("bob", "hi", timeout=30)


def test_a_reply_to_a_message_built_by_hand_is_checked_before_it_is_sent(member) -> None:
    from robotlab.bus.member.message import Message
    from robotlab.errors import ProtocolError

    bob = member("bob")
    forged = Message(id="x.1", sender="a" * (protocol.NAME_MAX + 1), sender_instance="i-1",
                     to="bob", type="request", content=None)
    with pytest.raises(ProtocolError, match="SEND header field 'to'"):
        bob.reply(forged, "ok")
    with pytest.raises(ProtocolError, match="SEND header field 'reply_to'"):
        asked = Message(id="", sender="alice", sender_instance="i-1", to="bob", type="request",
                        content=None)
        bob.reply(asked, "ok")


def test_a_duplicate_is_answered_with_the_reply_as_it_was_sent() -> None:
    url = f"inproc://replies-{uuid.uuid4().hex[:8]}"
    config = BrokerConfig(heartbeat=0.1)
    brokers = [EmbeddedBroker(url, config).start()]
    alice, bob = bus.connect(url, name="alice"), bus.connect(url, name="bob")
    try:
        answer, runs, seen = ["first"], [], []
        bob.on_message(lambda message: (runs.append(message.id), answer)[1])
        # replies nobody waits for come here
        alice.on_message(lambda message: seen.append(message.content))
        tracker = alice.send("bob", "question")
        wait_until(lambda: seen == [["first"]], message="the first reply")
        answer.append("changed after the reply went")
        _restart_forgetting(brokers, alice, bob)
        _send_again(alice, tracker.id, "question")
        wait_until(lambda: len(seen) == 2, message="the duplicate answered from the reply cache")
        assert seen == [["first"], ["first"]]
        assert runs == [tracker.id]
    finally:
        alice.close()
        bob.close()
        for broker in brokers:
            broker.stop()


def test_the_reply_cache_keeps_the_newest_replies_within_its_bytes() -> None:
    url = f"inproc://replies-{uuid.uuid4().hex[:8]}"
    brokers = [EmbeddedBroker(url, BrokerConfig(heartbeat=0.1)).start()]
    alice, bob = bus.connect(url, name="alice"), bus.connect(url, name="bob")
    try:
        # Given bob's cache holding 2.5 of its 1 KB replies, and four questions answered
        bob.dispatcher.reply_cache_bytes = 2_500
        runs, seen = [], []
        bob.on_message(lambda message: (runs.append(message.id), f"{message.content}" * 1_000)[1])
        alice.on_message(lambda message: seen.append(message.content[0]))
        ids = [alice.send("bob", letter).id for letter in "abcd"]
        wait_until(lambda: len(seen) == 4, message="the four replies")
        # When a broker that forgot them all delivers the first and the last again, in that order
        _restart_forgetting(brokers, alice, bob)
        _send_again(alice, ids[0], "a")
        _send_again(alice, ids[3], "d")
        # Then the last is answered from the cache, the first (its reply gone to make room) only
        # acked, and neither ran again
        wait_until(lambda: len(seen) == 5, message="the cached reply sent again")
        assert seen == ["a", "b", "c", "d", "d"]
        assert runs == ids
    finally:
        alice.close()
        bob.close()
        for broker in brokers:
            broker.stop()


def _restart_forgetting(brokers: list[EmbeddedBroker], *members: bus.BusClient) -> None:
    """Stop the running broker and start one on its address that never heard of what the first
    delivered (no journal), as a broker restarted without its file would."""
    brokers[-1].stop()
    wait_until(lambda: not any(member.connected for member in members),
               message="the members notice the broker is gone")
    brokers.append(EmbeddedBroker(brokers[-1].url, brokers[-1].config).start())
    wait_until(lambda: all(member.connected for member in members),
               message="the members welcomed again")


def _send_again(sender: bus.BusClient, message_id: str, content: str) -> None:
    """Send message ``message_id`` to bob again, as a resend after a reconnect would."""
    frames = protocol.encode(protocol.Command.SEND,
                             {"id": message_id, "to": "bob", "type": "message"},
                             protocol.pack(content))
    sender._link.post(frames)


def test_a_reply_that_cannot_cross_nacks_its_request_with_the_reason(member) -> None:
    alice, bob = member("alice", ack_timeout=60.0), member("bob")
    # a function cannot cross a process boundary
    bob.on_message(lambda message: {"callback": print})
    with pytest.raises(Nacked,
                       match=r"the reply could not be sent: BoundaryError: reply\['callback'\] is "
                             r"a function"):
        alice.request("bob", "hi", timeout=30)


def _live_trackers() -> int:
    import gc

    from robotlab.bus.member.tracking import Tracker

    gc.collect()
    return sum(isinstance(each, Tracker) for each in gc.get_objects())


def test_requests_sent_ahead_are_forgotten_once_answered_or_failed(member) -> None:
    # A pipelining caller (send_request, then reply) once left each Tracker registered for good:
    # seven objects a request, for as long as the client ran.
    alice, bob = member("alice"), member("bob")
    bob.on_message(bus.inline(lambda m: m.content))
    assert alice.request("bob", "warm", timeout=10).content == "warm"
    before = _live_trackers()
    for start in range(0, 200, 8):
        window = [alice.send_request("bob", i) for i in range(start, start + 8)]
        assert [tracker.reply(10).content for tracker in window] == list(range(start, start + 8))
    failed = [alice.send_request("nobody-here", i) for i in range(20)]
    for tracker in failed:
        with pytest.raises(DeliveryFailed):
            tracker.reply(10)
    del window, failed, tracker
    assert _live_trackers() <= before


def test_a_request_never_answered_is_forgotten_once_its_caller_lets_go_of_its_tracker(
        member) -> None:
    # A caller that gave up on send_request's reply (the request delivered, never answered) once
    # left its Tracker registered for as long as the client ran: one more for every such request.
    from robotlab.bus.member.outstanding import REQUESTS_MARK

    alice, bob = member("alice"), member("bob")
    kept: list[bus.Message] = []

    def handler(delivery, message) -> None:  # acks every request and answers none
        if message.content == "kept":
            kept.append(message)
        delivery.ack()

    bob.on_message(handler, manual=True)
    held = alice.send_request("bob", "kept").wait(10)
    before = _live_trackers()

    # When three marks' worth of requests are delivered and let go of, unanswered
    for i in range(3 * REQUESTS_MARK):
        alice.send_request("bob", i).wait(10)

    # Then fewer than one mark of their Trackers is left, and the one still held gets its late reply
    assert _live_trackers() - before < REQUESTS_MARK + 8
    bob.reply(kept[0], "at last")
    assert held.reply(10).content == "at last"


def test_what_a_sender_notes_of_its_tracker_is_noted_before_the_message_leaves(member) -> None:
    alice, bob = member("alice"), member("bob")
    arrived: list[str] = []
    bob.on_message(lambda message: arrived.append(message.id))
    noted: list[str] = []

    def note(tracker: bus.Tracker) -> None:
        # bob does not have it while its sender notes it, however long that takes
        with pytest.raises(AssertionError):
            wait_until(lambda: arrived, timeout=0.3, message="bob has it")
        noted.append(tracker.id)

    # Given a sender that notes its message's id (as a robot does, to correlate a plain reply)
    tracker = alice.send("bob", "hi", on_tracker=note)
    # Then it noted the id before bob could see the message, and bob then got it
    tracker.wait(10)
    assert noted == [tracker.id]
    wait_until(lambda: arrived == [tracker.id], timeout=10, message="bob has it")


def test_a_refusal_after_the_requests_deadline_is_the_callers_time_out(member) -> None:
    alice, bob = member("alice"), member("bob")

    def give_up_at_the_deadline(message) -> None:
        wait_until(lambda: time.time() > message.deadline + 0.05, timeout=5,
                   message="the request's deadline")
        raise RuntimeError("cut at the caller's deadline")

    bob.on_message(give_up_at_the_deadline)
    # Given a request whose deadline passes while bob works, and bob's refusal coming after it
    # but well before the caller stops waiting
    with pytest.raises(ReplyTimeout, match="nacked at it: RuntimeError: cut at") as caught:
        alice.request("bob", "work", timeout=10, deadline=time.time() + 0.3)
    # Then the caller hears its own time-out (exit 75, try again), with what bob said
    assert caught.value.delivery == "nacked"


def test_a_refusal_before_the_deadline_stays_a_refusal(member) -> None:
    alice, bob = member("alice"), member("bob")
    bob.on_message(lambda message: (_ for _ in ()).throw(ValueError("no such task")))
    with pytest.raises(Nacked, match="ValueError: no such task"):
        alice.request("bob", "work", timeout=10)
