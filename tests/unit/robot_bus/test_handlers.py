"""on_message (both forms), respond_to_tasks and serve, on an embedded broker."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from robotlab import bus
from robotlab.errors import Nacked
from robotlab.robot.messaging import flatten_content
from robotlab.robot.spawn import RemoteRobot
from tests.waiting import wait_until


def test_one_argument_handler_is_acked_when_it_returns(robot) -> None:
    seen: list[Any] = []
    robot("bob").on_message(seen.append)
    alice = robot("alice")
    message = alice.send_message(to="bob", content={"n": 1})
    alice.outbox[message.key]["delivery"].wait(5)
    [got] = seen
    assert (got.from_, got.content, got.key) == ("alice", {"n": 1}, "alice:1")


def test_a_handler_that_raises_comes_back_nacked_with_the_reason(robot) -> None:
    def grumpy(message: Any) -> None:
        raise ValueError(f"refusing {message.content}")

    robot("bob").on_message(grumpy)
    alice = robot("alice")
    message = alice.send_message(to="bob", content="work")
    with pytest.raises(Nacked, match="ValueError: refusing work"):
        alice.outbox[message.key]["delivery"].wait(5)


def test_two_argument_handler_settles_by_hand(robot) -> None:
    def picky(delivery: Any, message: Any) -> None:
        if message.content == "bad":
            delivery.nack("no thanks")
        else:
            delivery.ack()

    robot("bob").on_message(picky)
    alice = robot("alice")
    good, bad = alice.send_message(to="bob", content="good"), alice.send_message(
        to="bob", content="bad")
    assert alice.outbox[good.key]["delivery"].wait(5).status == "delivered"
    with pytest.raises(Nacked, match="no thanks"):
        alice.outbox[bad.key]["delivery"].wait(5)


def test_on_message_replaces_the_handler(robot) -> None:
    first: list[Any] = []
    second: list[Any] = []
    bob = robot("bob").on_message(first.append)
    assert bob.on_message(second.append) is bob
    alice = robot("alice")
    key = alice.send_message(to="bob", content="x").key
    alice.outbox[key]["delivery"].wait(5)
    assert (first, [m.content for m in second]) == ([], ["x"])


def test_replies_are_correlated_before_the_handler_sees_them(robot) -> None:
    robot("bob", ["pong"]).serve()
    alice = robot("alice")
    statuses: list[str] = []
    alice.on_message(lambda message: statuses.append(alice.outbox[message.in_reply_to]["status"]))
    alice.send_message(to="bob", content="ping")
    wait_until(lambda: statuses, message="alice's handler ran")
    assert statuses == ["replied"]


def test_respond_to_tasks_without_auto_reply_sends_nothing_back(robot) -> None:
    heard: list[str] = []
    robot("bob").respond_to_tasks(lambda message: heard.append(message.content) or "unsent",
                                  auto_reply=False)
    alice = robot("alice")
    key = alice.send_message(to="bob", content="fyi").key
    alice.outbox[key]["delivery"].wait(5)
    assert heard == ["fyi"]
    assert alice.outbox[key]["status"] == "sent"


def test_serve_runs_hash_content_as_lines(robot) -> None:
    bob = robot("bob", ["done"]).serve()
    reply = robot("alice").ask("bob", {"task": "sum", "numbers": [1, 2]}, timeout=5)
    assert reply.content == "done"
    assert bob.llm.requests[0].last_user == "task: sum\nnumbers: [1, 2]"
    assert flatten_content(None) == "" and flatten_content(3) == "3"


def test_a_plain_bus_client_gets_plain_content_back(robot, broker) -> None:
    robot("bob", ["hello, client"]).serve()
    with bus.connect(broker.url, name="cli", context=broker.context) as client:
        assert client.request("bob", "hi", timeout=5).content == "hello, client"


def test_a_robot_s_handler_sees_that_a_message_was_handed_out_again(tmp_path) -> None:
    from robotlab import Robot
    from robotlab.bus import BrokerConfig, EmbeddedBroker

    journal = str(tmp_path / "broker.db")
    first = EmbeddedBroker(config=BrokerConfig(heartbeat=0.2, journal=journal, hold=30.0)).start()
    taken: list[Any] = []
    owner = bus.BusClient(first.url, name="bob", instance="bob-1").on_message(
        lambda delivery, message: taken.append(message), manual=True)  # never settles it
    try:
        with owner.start(), bus.connect(first.url, name="alice", instance="alice-1") as alice:
            alice.send("bob", "refund order 7", any=True)
            wait_until(lambda: taken, message="bob-1 has the message")
            first.stop()  # its owner, bob-1, is journaled with it; bob-1 never says BYE to it
    finally:
        first.stop()
    # bob-1 never comes back: after the hold the message goes to the robot, as its second try
    second = EmbeddedBroker(config=BrokerConfig(heartbeat=0.2, journal=journal, hold=1.0)).start()
    seen: list[Any] = []
    bob = Robot(name="bob")
    bob.on_message(seen.append)
    try:
        bob.with_bus(second.url)
        wait_until(lambda: seen, timeout=10, message="the message handed to the robot")
        [message] = seen
        assert (message.content, message.attempt, message.redelivered) == (
            "refund order 7", 2, True)
        assert taken[0].attempt == 1
    finally:
        bob.leave_bus()
        second.stop()


def test_an_inline_responder_answers_on_the_i_o_thread_while_a_model_run_goes_elsewhere(
        robot) -> None:
    threads: list[str] = []

    @bus.inline
    def echo(message: Any) -> Any:
        threads.append(threading.current_thread().name)
        return message.content

    # Given a robot whose quick responder is inline, and whose model takes 3 s to answer
    bob = robot("bob", [{"content": "slow answer", "delay": 3.0}])
    bob.respond_to_tasks(echo)
    alice = robot("alice")
    runner = RemoteRobot("bob", robot("carol"))
    started = threading.Thread(target=lambda: results.append(runner.run("think")))
    results: list[Any] = []
    started.start()
    try:
        # When alice asks while the model runs, she is answered at once, from the I/O thread
        answer = alice.ask("bob", {"n": 1}, timeout=2)
        assert answer.content == {"n": 1}
        assert threads == ["robotlab-bus-bob"]
    finally:
        started.join(10)
    # Then the run request was answered too: it ran on a thread of its own
    [result] = results
    assert result.reply == "slow answer"
