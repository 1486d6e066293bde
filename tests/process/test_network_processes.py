"""Networks whose members are real robots in robotd processes, sharing the network's memory.

Each member process runs ``robotd --handler tests.process.test_network_processes:member``: a
real ``Robot`` driven by the scripted model, behind a ``TaskServer``. What the member is (its
name, script and hooks) comes from ``MEMBER_*`` environment variables set by the fixture.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from functools import cache
from typing import Any

import pytest

from robotlab import Robot, RunConfig, bus, create_network
from robotlab.bus import Message
from robotlab.errors import ConfigError
from robotlab.hooks.hooks import Hook
from robotlab.robot.remote_tasks import TaskServer, is_network_task
from robotlab.testing import ScriptedLLM
from tests.process.conftest import live
from tests.waiting import wait_until

pytestmark = pytest.mark.process

# -- the member side (runs inside robotd) ---------------------------------------------------


class WaitsForPlan(Hook):
    """Subscribe to "plan", say so, then wait for it and record what was seen and heard."""

    def before_run(self, ctx: Any) -> None:
        memory = ctx.memory
        memory.subscribe("plan", callback=lambda change: memory.set(
            "heard", {"writer": change.writer, "value": change.value}))
        memory.set("watching", True)
        memory.set("seen", memory.get("plan", wait=10))


class WritesPlan(Hook):
    """Wait until the watcher is listening, then write the plan."""

    def before_run(self, ctx: Any) -> None:
        ctx.memory.get("watching", wait=10)
        ctx.memory.set("plan", "ship it")


class WaitsForever(Hook):
    """Wait on a key nobody sets: only a lost memory service ends it."""

    def before_run(self, ctx: Any) -> None:
        ctx.memory.set("waiting", True)
        ctx.memory.get("never", wait=True)


HOOKS = {"waits_for_plan": WaitsForPlan, "writes_plan": WritesPlan, "waits_forever": WaitsForever}


@cache
def _server() -> TaskServer:
    robot = Robot(name=os.environ["MEMBER_NAME"],
                  llm=ScriptedLLM(json.loads(os.environ["MEMBER_SCRIPT"])))
    if os.environ.get("MEMBER_HOOK"):
        robot.on(HOOKS[os.environ["MEMBER_HOOK"]])
    return TaskServer(robot, os.environ["MEMBER_BROKER"])


def member(message: Message) -> Any:
    """The robotd handler: run network tasks, ignore anything else."""
    return _server().handle(message.content) if is_network_task(message) else None


if "MEMBER_NAME" in os.environ:
    # Inside a member robotd: build the robot now, as `robotd --serve` does at start, so
    # the first task does not pay for it.
    _server()


# -- the test side --------------------------------------------------------------------------


@pytest.fixture
def start_member(processes, broker: str):
    """Start a robotd hosting a scripted robot named ``name``; wait until it is live."""

    def start(name: str, turns: list[dict[str, Any]], hook: str = "") -> Any:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", broker,
                "--handler", "tests.process.test_network_processes:member"]
        env = {"MEMBER_NAME": name, "MEMBER_SCRIPT": json.dumps(turns), "MEMBER_BROKER": broker,
               "MEMBER_HOOK": hook, "PYTHONPATH": os.getcwd()}
        return processes.keep(argv, lambda proc: live(broker, name), env=env, name=f"member-{name}",
                              timeout=20)

    return start


@pytest.fixture
def client(broker: str):
    with bus.connect(broker, name="network-owner") as owner:
        yield owner


def test_two_slow_members_in_other_processes_run_together_or_one_by_one(
        start_member, client) -> None:
    slow = [{"content": "done", "delay": 0.5}] * 2
    start_member("slow-a", slow)
    start_member("slow-b", slow)

    def timed(cap: int | None) -> tuple[float, Any]:
        net = create_network(name=f"slow-{cap}",
                             config=RunConfig(bus=client, max_concurrent_robots=cap))
        # serves the memory: setup, not task time
        net.task("a", "slow-a").task("b", "slow-b").build()
        started = time.monotonic()
        result = net.run("go")
        net.close()
        return time.monotonic() - started, result

    together, result = timed(None)
    print(f"two 0.5 s members: together {together:.3f} s", end="; ")
    assert together < 0.9, together
    assert result.context["slow-a"].reply == result.context["slow-b"].reply == "done"
    one_by_one, _ = timed(1)
    print(f"one by one {one_by_one:.3f} s")
    assert one_by_one >= 1.0, one_by_one


def test_members_in_other_processes_share_memory_wait_and_hear_changes(
        start_member, client) -> None:
    start_member("watcher", [{"content": "watched"}], hook="waits_for_plan")
    start_member("planner", [{"content": "planned"}], hook="writes_plan")
    net = create_network(name="crew", config=RunConfig(bus=client))
    changes: list[Any] = []
    net.memory.subscribe("plan", callback=changes.append)
    net.task("watch", "watcher").task("plan", "planner")
    try:
        result = net.run("go")
        assert result.context["watcher"].reply == "watched", result.context["watcher"].reply
        assert net.memory.get("seen") == "ship it"
        heard = net.memory.get("heard", wait=5)
        assert heard == {"writer": "planner", "value": "ship it"}
        net.memory.flush(2)
        assert [(c.value, c.writer, c.network_name)
                for c in changes] == [("ship it", "planner", "crew")]
    finally:
        net.close()


def test_a_failing_member_does_not_stop_the_pipeline(start_member, client) -> None:
    start_member("flaky", [{"error": {"status": 500, "message": "provider down"}}])
    start_member("steady", [{"content": "carried on"}])
    with create_network(name="sturdy", config=RunConfig(bus=client)) as net:
        net.task("first", "flaky").task("second", "steady", depends_on=["first"])
    result = net.run("go")
    net.close()
    failed = result.context["flaky"].reply
    assert failed.startswith("Error: InferenceError:") and "provider down" in failed
    assert result.reply == "carried on"
    assert result.errors["first"][0].startswith("InferenceError:")


def test_losing_the_memory_holder_is_an_error_the_member_sees(start_member, client) -> None:
    start_member("patient", [{"content": "never"}], hook="waits_forever")
    net = create_network(name="fragile", config=RunConfig(bus=client)).task("wait", "patient")
    net.build()
    results: list[Any] = []
    runner = threading.Thread(target=lambda: results.append(net.run("go")))
    runner.start()
    wait_until(lambda: net.memory.get("waiting"), timeout=10, message="the member is waiting")
    net.close()
    runner.join(15)
    assert not runner.is_alive(), "the member hung after the memory service went away"
    reply = results[0].context["patient"].reply
    # Which failure depends on when the memory service left: before the member's call reached
    # the broker (undeliverable), with the call in flight (timeout: it left holding it), or
    # after the broker handed it over and before a reply (no reply in time).
    failure = reply.split(":", 2)[:2]
    assert failure[0] == "Error" and failure[1].strip() in {"Undeliverable", "DeliveryTimeout",
                                                            "ReplyTimeout"}, reply


def test_an_unreachable_member_name_fails_the_step_not_the_run(client) -> None:
    net = create_network(name="ghosts", config=RunConfig(bus=client)).task("t", "nobody-home")
    result = net.run("go")
    net.close()
    assert result.reply.startswith("Error: Undeliverable:")
    assert "nobody-home" in result.reply


def test_the_demo_pipeline_runs_across_processes(broker: str) -> None:
    from robotlab.demo.network import run_demo

    lines: list[str] = []
    result = run_demo(broker, say=lines.append, step=0.3)
    assert result.reply == "Summary: offer yearly billing up front."
    assert any("(written by researcher)" in line for line in lines), lines
    assert any("(written by reviewer)" in line for line in lines), lines


def test_a_cyclic_network_of_remote_members_is_refused_before_anything_is_sent(
        start_member, client) -> None:
    start_member("cyclist", [{"content": "never asked"}])
    net = create_network(name="loop", config=RunConfig(bus=client))
    net.task("a", "cyclist", depends_on=["b"]).task("b", "cyclist", depends_on=["a"])
    with pytest.raises(ConfigError, match=r"Dependency cycle in network 'loop': a -> b -> a"):
        net.run("go")
    assert net.memory_service_name is None  # nothing was served, nothing was sent
