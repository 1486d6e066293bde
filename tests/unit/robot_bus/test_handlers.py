"""on_message (both forms), respond_to_tasks and serve, on an embedded broker."""

from __future__ import annotations

from typing import Any

import pytest

from robotlab import bus
from robotlab.errors import Nacked
from robotlab.robot.messaging import flatten_content
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
