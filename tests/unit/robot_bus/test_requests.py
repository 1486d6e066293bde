"""Run requests, info and delegation by name between robots on an embedded broker."""

from __future__ import annotations

import pytest

from robotlab import Robot, bus
from robotlab.errors import DelegationTimeout, RemoteError
from robotlab.robot.delegation import DelegationFuture
from robotlab.robot.spawn import RemoteRobot


def test_a_serving_robot_runs_a_request_and_returns_its_result(robot) -> None:
    robot("bob", ["42"]).serve()
    result = RemoteRobot("bob", robot("alice")).run("What is six times seven?")
    assert (result.robot_name, result.reply, result.output_tokens) == ("bob", "42", 5)


def test_info_describes_the_robot(robot) -> None:
    robot("bob", model="m1", provider="ollama", system_prompt="Be brief.")
    info = RemoteRobot("bob", robot("alice")).info()
    assert info["model"] == "m1" and info["provider"] == "ollama"
    assert (info["system_prompt"], info["serving"]) == ("Be brief.", False)


def test_a_robot_that_does_not_serve_refuses_run_requests(robot) -> None:
    robot("bob")
    with pytest.raises(RemoteError, match="ConfigError: robot 'bob' does not serve run requests"):
        RemoteRobot("bob", robot("alice")).run("hi")


def test_delegate_by_name_returns_a_future_with_the_result(robot) -> None:
    robot("bob", [{"content": "done", "delay": 0.2}]).serve()
    manager = robot("manager")
    future = manager.delegate(to="bob", task="do it", async_=True)
    assert isinstance(future, DelegationFuture) and not future.resolved()
    result = future.value(timeout=5)
    assert (result.reply, result.delegated_by) == ("done", "manager")
    assert result.duration >= 0.2


def test_a_delegatee_error_is_raised_in_the_delegator_every_time(robot) -> None:
    robot("bob", [{"error": {"status": 400, "message": "bad request"}}]).serve()
    future = robot("manager").delegate(to="bob", task="do it", async_=True)
    for _ in range(2):
        with pytest.raises(RemoteError, match="InferenceError") as caught:
            future.value(timeout=5)
    assert caught.value.type_name == "InferenceError"


def test_a_slow_delegatee_times_out(robot) -> None:
    robot("bob", [{"content": "late", "delay": 0.6}]).serve()
    future = robot("manager").delegate(to="bob", task="do it", async_=True)
    with pytest.raises(DelegationTimeout, match="Delegation to 'bob' timed out after 0.1s"):
        future.value(timeout=0.1)


def test_with_bus_without_a_broker_starts_one_others_can_join() -> None:
    alice = Robot(name="alice").with_bus()
    try:
        assert alice.bus.url.startswith("ipc://")
        assert alice.with_bus() is alice and alice.with_bus(alice.bus.url) is alice
        with bus.connect(alice.bus.url, name="other") as other:
            assert {row["name"] for row in other.admin("ps")} == {"alice"}
    finally:
        alice.leave_bus()
    assert alice.bus is None


def test_a_bus_client_named_like_the_robot_is_adopted(broker) -> None:
    client = bus.BusClient(broker.url, name="bob", context=broker.context)
    bob = Robot(name="bob", bus=client)
    assert bob.bus is client
    bob.leave_bus()
    client.close()
