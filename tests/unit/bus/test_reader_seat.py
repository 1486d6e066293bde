"""The reader's seat: a caller waiting for its reply reads the socket itself, and nothing else
suffers."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from robotlab import bus
from robotlab.bus.member import reader_seat, timerfd
from robotlab.errors import BusError, DeliveryFailed, ReplyTimeout
from tests.waiting import wait_until


def _slow_echo(delay: float):
    def handler(message: bus.Message) -> object:
        threading.Event().wait(delay)  # the handler thread, not the test, waits
        return message.content

    return handler


def test_a_waiting_caller_reads_and_handles_what_arrives_meanwhile(member) -> None:
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    bob.on_message(_slow_echo(0.05))
    seen: list[tuple[object, str]] = []
    alice.on_message(bus.inline(lambda m: seen.append((m.content,
                                                       threading.current_thread().name))))
    asked = threading.Event()

    def ask() -> None:
        asked.set()
        assert alice.request("bob", "slow", timeout=5).content == "slow"

    for _ in range(20):  # until carol's message lands while alice sits in the seat
        asker = threading.Thread(target=ask, name="asker")
        asker.start()
        asked.wait(5)
        carol.send("alice", "meanwhile").wait(5)
        asker.join(5)
        if any(thread == "asker" for _, thread in seen):
            break
    assert all(content == "meanwhile" for content, _ in seen)
    assert {thread for _, thread in seen} <= {"asker", f"robotlab-bus-{alice.name}"}
    assert any(thread == "asker" for _, thread in seen), seen


def test_many_threads_waiting_at_once_each_get_their_own_replies(member) -> None:
    alice, bob = member("alice"), member("bob")
    bob.on_message(bus.inline(lambda m: m.content))
    results: dict[int, list[object]] = {}

    def ask(worker: int) -> None:
        results[worker] = [alice.request("bob", [worker, i], timeout=10).content for i in range(40)]

    workers = [threading.Thread(target=ask, args=(w,)) for w in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert results == {w: [[w, i] for i in range(40)] for w in range(6)}


@pytest.mark.parametrize("timer", [True, False], ids=["leave-timer", "no-timerfd"])
@pytest.mark.parametrize("inline", [True, False])
def test_a_message_after_the_seated_caller_left_is_handled_at_once(member, inline: bool,
                                                                   timer: bool,
                                                                   monkeypatch) -> None:
    if not timer:  # where timerfd is missing, the stepped-aside I/O thread looks every LOOK_MS
        monkeypatch.setattr(timerfd, "one_shot", lambda seconds: None)
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    bob.on_message(bus.inline(lambda m: m.content))
    got: list[object] = []
    alice.on_message(lambda m: got.append(m.content), inline=inline)
    for i in range(5):
        assert alice.request("bob", i, timeout=5).content == i
        start = time.monotonic()
        carol.send("alice", i).wait(5)  # acked only once alice's handler took it
        assert got[-1] == i
        # seconds of slack on a loaded machine; a lost wake-up is forever
        assert time.monotonic() - start < 2
    assert got == list(range(5))
    assert (alice._link.seat.timer is not None) == timer


def test_a_wait_longer_than_the_seat_slice_still_gets_its_reply(member) -> None:
    alice, bob = member("alice"), member("bob")
    bob.on_message(_slow_echo(reader_seat.SLICE * 4))
    assert alice.request("bob", "late", timeout=10).content == "late"
    tracker = alice.send("bob", "acked late")
    assert tracker.wait(10) is tracker and tracker.status == "delivered"


def test_a_request_nobody_answers_times_out_when_asked(member) -> None:
    alice, bob = member("alice"), member("bob")
    held: list[object] = []
    bob.on_message(lambda *taken: held.append(taken), manual=True)  # taken, never settled
    start = time.monotonic()
    with pytest.raises(ReplyTimeout):
        alice.request("bob", "anyone?", timeout=0.5)
    assert 0.5 <= time.monotonic() - start < 5
    assert len(held) == 1


def test_an_inline_handler_run_by_a_seated_caller_may_not_wait_for_a_reply(member) -> None:
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    bob.on_message(_slow_echo(0.2))
    carol.on_message(bus.inline(lambda m: "carol"))
    outcomes: list[str] = []

    def nested(message: bus.Message) -> None:
        try:
            alice.request("carol", "hi", timeout=2)
            outcomes.append(f"answered on {threading.current_thread().name}")
        except BusError as exc:
            outcomes.append(str(exc))

    alice.on_message(nested, inline=True)
    asker = threading.Thread(target=lambda: alice.request("bob", "x", timeout=5))
    asker.start()
    carol.send("alice", "ask carol").wait(5)
    asker.join(10)
    assert len(outcomes) == 1
    assert "cannot wait for a reply" in outcomes[0]


def test_closing_the_client_ends_a_seated_wait(member) -> None:
    alice, bob = member("alice"), member("bob")
    bob.on_message(lambda *taken: None, manual=True)  # never answers
    failures: list[BaseException] = []

    def ask() -> None:
        try:
            alice.request("bob", "x", timeout=60)
        except (DeliveryFailed, ReplyTimeout) as exc:
            failures.append(exc)

    asker = threading.Thread(target=ask)
    asker.start()
    wait_until(lambda: alice._link.seat.holder is not None or bool(alice._outstanding.requests),
               timeout=5)
    start = time.monotonic()
    alice.close()
    asker.join(10)
    assert not asker.is_alive()
    assert time.monotonic() - start < 10
    assert len(failures) == 1



def test_frames_behind_a_seated_callers_reply_never_wait_out_a_poll_timeout() -> None:
    # A 30 s heartbeat makes the I/O thread's poll timeout 15 s: a frame nobody reads because its
    # edge was taken (or because a seated caller left on its own reply without reading ZMQ_EVENTS
    # again) would wait that long, past each wait below.
    broker = bus.EmbeddedBroker(config=bus.BrokerConfig(heartbeat=30.0, ack_timeout=60.0)).start()
    alice, bob, carol = (bus.connect(broker.url, name=name) for name in ("alice", "bob", "carol"))
    try:
        bob.on_message(bus.inline(lambda m: m.content))
        got: list[object] = []
        alice.on_message(lambda m: got.append(m.content))
        stop = threading.Event()

        def ask() -> None:
            while not stop.is_set():
                alice.request("bob", "ping", timeout=10)

        asker = threading.Thread(target=ask, name="asker")
        asker.start()
        try:
            for i in range(200):
                # acked once alice's handler has it: a few ms, never 15 s
                carol.send("alice", i).wait(5)
        finally:
            stop.set()
            asker.join(10)
        assert got == list(range(200))
    finally:
        for client in (alice, bob, carol):
            client.close()
        broker.stop()


def test_a_frame_right_behind_the_reply_is_read_though_the_caller_asks_nothing_more() -> None:
    # bob answers and at once sends alice another message: both often reach alice's socket
    # together, and her seated caller leaves on the reply. Nobody asks again, so only the leave
    # timer's I/O thread can read the second before its 15 s poll timeout.
    broker = bus.EmbeddedBroker(config=bus.BrokerConfig(heartbeat=30.0, ack_timeout=60.0)).start()
    alice, bob = (bus.connect(broker.url, name=name) for name in ("alice", "bob"))
    try:
        def answer(delivery: bus.Delivery, message: bus.Message) -> None:
            bob.reply(message, message.content)
            bob.send("alice", ("behind", message.content), receipt=False)
            delivery.ack()

        bob.on_message(answer, manual=True)
        got: list[object] = []
        alice.on_message(lambda m: got.append(m.content))
        for i in range(20):
            assert alice.request("bob", i, timeout=5).content == i
            wait_until(lambda i=i: ["behind", i] in got, timeout=5,
                       message=f"the frame behind reply {i}")
    finally:
        for client in (alice, bob):
            client.close()
        broker.stop()



def test_a_sender_reads_what_waits_behind_its_send_itself_and_no_more_than_its_budget(
        member) -> None:
    from robotlab.bus.member.socket_pump import DRAIN_BUDGET

    alice, bob, carol = member("alice", ack_timeout=30.0), member("bob"), member("carol")
    bob.on_message(bus.inline(lambda m: None))
    sends = [0]  # alice's sends so far: the frames one send read share its count
    seen: list[tuple[object, str, int]] = []
    alice.on_message(bus.inline(lambda m: seen.append((m.content, threading.current_thread().name,
                                                       sends[0]))))
    done = threading.Event()

    def send_meanwhile() -> None:  # paced: a flood of its own would only queue at the broker
        while not done.wait(0.0005):
            sends[0] += 1
            alice.send("bob", "tick", receipt=False)

    sender = threading.Thread(target=send_meanwhile, name="sender")
    sender.start()
    try:
        for start in range(0, 4000, 48):  # windows below alice's in-flight bound, until it happened
            for tracker in [carol.send("alice", i) for i in range(start, start + 48)]:
                tracker.wait(20)
            if start >= 960 and any(thread == "sender" for _, thread, _ in seen):
                break
    finally:
        done.set()
        sender.join(10)
    # each once, none lost
    assert sorted(content for content, _, _ in seen) == list(range(start + 48))
    assert {thread for _, thread, _ in seen} <= {"sender", f"robotlab-bus-{alice.name}"}
    by_send = Counter(count for _, thread, count in seen if thread == "sender")
    assert by_send, "the sending thread never read what waited behind its send"
    assert max(by_send.values()) <= DRAIN_BUDGET


def test_a_drain_on_a_fired_fd_with_no_message_waiting_ends_quietly(member) -> None:
    # The fd is libzmq's command mailbox: a poll can report it for a command that brought no
    # message. A drain told the fd fired receives first, finds nothing, and ends; the socket
    # still reports what comes next.
    alice, bob = member("alice"), member("bob")
    bob.on_message(bus.inline(lambda m: m.content))
    assert alice.request("bob", "before", timeout=5).content == "before"
    link = alice._link
    with link._lock:
        assert link._drain_socket(fired=True) is False
    assert not link.dropped
    assert alice.request("bob", "after", timeout=5).content == "after"
