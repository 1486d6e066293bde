"""Tools with side effects: each call runs with an idempotency key made from what the robot works
on."""

from __future__ import annotations

from typing import Any

import robotlab
from robotlab import Robot, bus
from robotlab.robot.requests import RUN_TYPE
from robotlab.testing import ScriptedLLM


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
