"""send_message, send_reply and ask on an embedded broker: ids, outbox, correlation, errors."""

from __future__ import annotations

import pytest

from robotlab import BoundaryError, BusError, Robot, bus
from robotlab.errors import ReplyTimeout, Undeliverable
from robotlab.robot.message import RobotMessage
from tests.waiting import wait_until


def test_send_message_without_a_bus_raises_bus_error() -> None:
    with pytest.raises(BusError, match="No bus configured on robot 'lonely'"):
        Robot(name="lonely").send_message(to="bob", content="hi")


def test_a_payload_that_cannot_cross_is_refused_before_anything_is_sent(robot) -> None:
    alice = robot("alice")
    with pytest.raises(BoundaryError, match=r"content\['f'\] is a function"):
        alice.send_message(to="bob", content={"f": lambda: 1})
    assert alice.messaging.message_counter == 0
    assert alice.outbox == {}


def test_served_reply_is_correlated_in_the_outbox(robot) -> None:
    bob = robot("bob", ["ping"]).serve()
    alice = robot("alice")
    sent = alice.send_message(to="bob", content="ping")
    assert sent.key == "alice:1"
    entry = wait_until(lambda: alice.outbox["alice:1"]
                       if alice.outbox["alice:1"]["status"] == "replied" else None,
                       message="alice:1 replied")
    [reply] = entry["replies"]
    assert (reply.from_, reply.content, reply.in_reply_to) == ("bob", "ping", "alice:1")
    assert bob.llm.requests[0].last_user == "ping"


def test_two_serving_robots_exchange_exactly_one_reply(robot, broker) -> None:
    alice = robot("alice", ["never used"]).serve()
    bob = robot("bob", ["pong"]).serve()
    alice.send_message(to="bob", content="ping")
    wait_until(lambda: alice.outbox["alice:1"]["status"] == "replied", message="the reply came")
    # Each robot handles deliveries in order: once a later message is acked by both, any
    # answer to the reply (a loop) would already have been sent and handled.
    with bus.connect(broker.url, name="probe", context=broker.context) as probe:
        for name in ("alice", "bob"):
            probe.send(name, RobotMessage(1, "probe", "flush", "probe:0").to_dict(),
                       type="robot_message").wait(5)
    assert alice.llm.requests == [] and len(bob.llm.requests) == 1
    assert (alice.messaging.message_counter, bob.messaging.message_counter) == (1, 1)


def test_ask_returns_the_reply_and_records_it(robot) -> None:
    robot("bob", ["pong"]).serve()
    alice = robot("alice")
    reply = alice.ask("bob", "ping", timeout=5)
    assert (reply.content, reply.in_reply_to) == ("pong", "alice:1")
    assert alice.outbox["alice:1"]["status"] == "replied"


def test_ask_times_out_saying_what_became_of_the_request(robot) -> None:
    robot("mute").on_message(lambda message: None)
    alice = robot("alice")
    with pytest.raises(ReplyTimeout, match="delivered and acked by"):
        alice.ask("mute", "hello?", timeout=0.5)


def test_ask_a_name_nobody_has_is_undeliverable(robot) -> None:
    with pytest.raises(Undeliverable):
        robot("alice").ask("nobody", "hello?", timeout=5)


def test_send_reply_reaches_the_asker_and_skips_the_outbox(robot) -> None:
    bob = robot("bob")
    bob.on_message(lambda message: bob.send_reply(to=message.from_, content="by hand",
                                                  in_reply_to=message.key))
    alice = robot("alice")
    assert alice.ask("bob", "hi", timeout=5).content == "by hand"
    assert list(bob.outbox) == []
    assert bob.messaging.message_counter == 1


def test_the_outbox_keeps_the_newest_entries_and_forgets_the_bus_ids_of_the_rest(robot) -> None:
    bob = robot("bob")
    bob.on_message(lambda message: None)
    alice = robot("alice")
    alice.messaging.outbox_limit = 3
    for number in range(5):
        alice.send_message(to="bob", content=number)
    assert list(alice.outbox) == ["alice:3", "alice:4", "alice:5"]
    for entry in alice.outbox.values():
        entry["delivery"].wait(5)
    # what a plain reply is matched by: kept for the kept entries only (it grew with every send)
    kept_ids = {entry["delivery"].id for entry in alice.outbox.values()}
    assert {alice.messaging.records.key_of_sent(bus_id) for bus_id in kept_ids} == set(
        alice.outbox)
    assert len(alice.messaging.records._sent_ids) == 3


def test_an_ask_past_the_limit_is_still_answered_and_recorded(robot) -> None:
    robot("bob", ["one", "two", "three"]).serve()
    alice = robot("alice")
    alice.messaging.outbox_limit = 2
    answers = [alice.ask("bob", f"question {n}", timeout=5).content for n in range(3)]
    assert answers == ["one", "two", "three"]
    assert {key: entry["status"] for key, entry in alice.outbox.items()} == {
        "alice:2": "replied", "alice:3": "replied"}


@pytest.mark.parametrize("entries", [-1, 2.5, True, "10"])
def test_an_outbox_limit_that_is_not_a_whole_number_of_entries_is_refused(entries) -> None:
    lonely = Robot(name="lonely")
    with pytest.raises(ValueError, match="outbox_limit must be a whole number of entries"):
        lonely.messaging.outbox_limit = entries
    assert lonely.messaging.outbox_limit == 1024


def test_an_outbox_limit_of_0_keeps_nothing_and_ask_still_answers(robot) -> None:
    robot("bob", ["pong"]).serve()
    alice = robot("alice")
    alice.messaging.outbox_limit = 0
    assert alice.ask("bob", "ping", timeout=5).content == "pong"
    assert alice.outbox == {}


def test_a_robot_remembers_where_a_message_came_from_not_its_content(robot) -> None:
    bob = robot("bob")
    got = []
    bob.on_message(got.append)
    alice = robot("alice")
    large = "x" * 200_000
    alice.send_message(to="bob", content=large)
    [message] = wait_until(lambda: got or None, message="bob got the message")
    remembered = bob.messaging.records.inbound(message.key)
    assert (remembered.sender, remembered.content, remembered.body) == ("alice", None, b"")
    # and what it kept is enough to answer exactly that sender
    bob.send_reply(to="alice", content="short", in_reply_to=message.key)
    entry = wait_until(lambda: alice.outbox["alice:1"]
                       if alice.outbox["alice:1"]["status"] == "replied" else None,
                       message="the reply came")
    assert [reply.content for reply in entry["replies"]] == ["short"]
