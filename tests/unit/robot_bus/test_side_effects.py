"""Tools with side effects: each call runs with an idempotency key made from what the robot works
on."""

from __future__ import annotations

import threading
from typing import Any

import robotlab
from robotlab import Robot, bus
from robotlab.bus import BrokerConfig, EmbeddedBroker
from robotlab.robot.requests import RUN_TYPE
from robotlab.testing import ScriptedLLM
from robotlab.tools import effects
from tests.waiting import wait_until


def calls(*names: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": {}, "id": f"c{i}"}
                           for i, name in enumerate(names)]}


def tools(seen: list[tuple[str, str | None]]) -> list[robotlab.Tool]:
    def record(name: str) -> Any:
        return lambda _arguments: seen.append((name, robotlab.idempotency_key())) or "ok"

    return [robotlab.Tool.create(name="charge", handler=record("charge"), side_effects=True),
            robotlab.Tool.create(name="look", handler=record("look"))]


def test_each_side_effect_call_of_a_run_gets_its_own_key_and_a_plain_tool_none() -> None:
    seen: list[tuple[str, str | None]] = []
    robot = Robot(name="till",
                  llm=ScriptedLLM([calls("charge", "look"), calls("charge"), {"content": "done"}]),
                  local_tools=tools(seen))
    robot.run("charge twice", tools="inherit")
    (first, key1), (looked, none), (second, key2) = seen
    assert (first, looked, second, none) == ("charge", "look", "charge", None)
    assert key1 is not None and key2 is not None
    assert key1.endswith(":1") and key2 == key1[:-1] + "2"
    assert robotlab.idempotency_key() is None  # outside a call


def test_a_run_for_a_bus_message_keys_its_calls_by_the_message(robot, broker) -> None:
    seen: list[tuple[str, str | None]] = []
    robot("bob", [calls("charge"), {"content": "charged"}], local_tools=tools(seen)).serve()
    with bus.connect(broker.url, name="carol") as carol:
        tracker = carol.send_request("bob", {"message": "charge order 7",
                                             "kwargs": {"tools": "inherit"}},
                                     type=RUN_TYPE)
        assert tracker.reply(10).content["reply"] == "charged"
    # The key is the message's sender instance and id: a redelivery of this message (same id)
    # after a crash or a restart gives its call the same key again.
    assert seen == [("charge", f"{carol.instance}/{tracker.id}:1")]


def test_a_run_handed_out_again_after_a_crash_knows_which_calls_completed(tmp_path) -> None:
    journal = str(tmp_path / "broker.db")
    seen: list[tuple[str | None, bool]] = []

    def charge(_arguments: Any) -> str:
        seen.append((robotlab.idempotency_key(), effects.done_before()))
        return "charged"

    def till() -> Robot:
        refund = robotlab.Tool.create(name="charge", handler=charge, side_effects=True)
        return Robot(name="bob", llm=ScriptedLLM([calls("charge"), {"content": "done"}]),
                     local_tools=[refund])

    # Given a robot whose run charged, then crashed before it settled the message
    first = EmbeddedBroker(config=BrokerConfig(heartbeat=0.2, journal=journal, hold=30.0)).start()
    crashed = threading.Event()
    bob_1 = till()
    bob_1.on_message(lambda m: (bob_1.run(m.content, tools="inherit"), crashed.wait(30)))
    try:
        bob_1.with_bus(first.url)
        with bus.connect(first.url, name="alice", instance="alice-1") as alice:
            sent = alice.send("bob", "refund order 7", any=True)
            key = f"alice-1/{sent.id}:1"
            wait_until(lambda: getattr(first._broker.deliveries.active.get(  # type: ignore
                ("alice-1", sent.id)), "effects", None) == [key],
                message="the broker keeps the completed charge")
            first.stop()
    finally:
        first.stop()
        crashed.set()
        bob_1.leave_bus()
    # When another instance gets the message from the broker started again on its journal
    second = EmbeddedBroker(config=BrokerConfig(heartbeat=0.2, journal=journal, hold=1.0)).start()
    bob_2 = till()
    bob_2.on_message(lambda m: bob_2.run(m.content, tools="inherit"))
    try:
        bob_2.with_bus(second.url)
        wait_until(lambda: len(seen) == 2, timeout=10, message="the second attempt's charge")
    finally:
        bob_2.leave_bus()
        second.stop()
    # Then its call has the same key, and knows the first attempt completed it
    assert seen == [(key, False), (key, True)]
