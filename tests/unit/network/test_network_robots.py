"""Networks of real robots driven by the scripted model (spec sections 20, 19 and 22)."""

from __future__ import annotations

import time
from typing import Any

from robotlab import Robot, RunConfig, create_network, tool
from robotlab.hooks.hooks import Hook
from robotlab.memory.memory import MemoryChange
from robotlab.testing import ScriptedLLM


def robot(name: str, *turns: dict[str, Any], **opts: Any) -> Robot:
    return Robot(name=name, llm=ScriptedLLM(list(turns)), **opts)


@tool
def lookup(order: str) -> str:
    """Look an order up.

    Args:
        order: the order id.
    """
    return f"order {order}: shipped"


def test_each_robot_reads_the_previous_reply() -> None:
    a = robot("a", {"content": "draft"})
    b = robot("b", {"content": "final"})
    with create_network(name="pipe") as net:
        net.task("write", a)
        net.task("edit", b, depends_on=["write"])
    result = net.run("Write a note")
    assert a.llm.requests[0].last_user == "Write a note"
    assert b.llm.requests[0].last_user == "draft"
    assert result.reply == "final"
    assert result.context["a"].reply == "draft"


def test_two_slow_robots_in_one_wave_overlap_and_the_cap_serialises_them() -> None:
    def net_of(cap: int | None) -> Any:
        net = create_network(name="slow", config=RunConfig(max_concurrent_robots=cap))
        net.task("x", robot("x", {"content": "x", "delay": 0.3}))
        net.task("y", robot("y", {"content": "y", "delay": 0.3}))
        return net

    started = time.monotonic()
    net_of(None).run("go")
    together = time.monotonic() - started
    started = time.monotonic()
    net_of(1).run("go")
    one_by_one = time.monotonic() - started
    assert together < 0.55, together
    assert one_by_one >= 0.6, one_by_one


def test_network_config_gives_llm_defaults_for_what_a_robot_leaves_unset() -> None:
    # Fix 2 at the top of the spec: the seed's behaviour, not the code's.
    plain = robot("plain", {"content": "1"})
    tuned = robot("tuned", {"content": "2"}, model="own-model", temperature=0.9)
    net = create_network(name="cfg",
                         config={"model": "net-model", "temperature": 0.1, "max_tokens": 64})
    net.task("plain", plain).task("tuned", tuned, depends_on=["plain"])
    net.run("hi")
    plain_params = plain.llm.requests[0].params
    tuned_params = tuned.llm.requests[0].params
    assert "net-model" in plain_params["model"] and plain_params["temperature"] == 0.1
    assert "own-model" in tuned_params["model"] and tuned_params["temperature"] == 0.9
    assert plain_params["max_tokens"] == tuned_params["max_tokens"] == 64


def test_tools_carry_forward_and_an_empty_list_removes_them() -> None:
    # Acceptance check 5 of section 20.
    up = robot("up", {"content": "u"}, local_tools=[lookup])
    down = robot("down", {"content": "d"}, local_tools=[lookup])
    last = robot("last", {"content": "l"}, local_tools=[lookup])
    with create_network(name="tools") as net:
        net.task("up", up, tools="inherit")
        net.task("down", down, depends_on=["up"])
        net.task("last", last, depends_on=["down"], tools=[])
    net.run("x")
    assert up.llm.requests[0].tool_names == ["lookup"]
    assert down.llm.requests[0].tool_names == ["lookup"]
    assert last.llm.requests[0].tool_names == []


def test_network_tools_reach_members_that_inherit() -> None:
    member = robot("member", {"content": "ok"}, local_tools=[lookup], tools="inherit")
    net = create_network(name="inherit",
                         config={"tools": ["lookup"]}).task("t", member, tools="inherit")
    net.run("x")
    assert member.llm.requests[0].tool_names == ["lookup"]


def test_a_robot_that_fails_gives_an_error_step_and_the_next_runs() -> None:
    broken = robot("broken", {"error": {"status": 500, "message": "provider down"}})
    after = robot("after", {"content": "recovered"})
    with create_network(name="fails") as net:
        net.task("broken", broken)
        net.task("after", after, depends_on=["broken"])
    result = net.run("x")
    failed = result.context["broken"]
    assert failed.reply.startswith("Error: InferenceError: ")
    assert "provider down" in failed.reply
    assert failed.duration is not None
    assert result.reply == "recovered"
    assert after.llm.requests[0].last_user == failed.reply


def test_task_hooks_on_a_robot_never_fire_but_on_the_network_they_do() -> None:
    # Acceptance check 3 of section 19.
    fired: list[str] = []

    class TaskWatch(Hook):
        def before_task(self, ctx: Any) -> None:
            fired.append(ctx.task_name)

        def before_run(self, ctx: Any) -> None:
            fired.append(f"run:{ctx.robot.name}")

    member = robot("member", {"content": "1"}, {"content": "2"})
    member.on(TaskWatch)
    net = create_network(name="hooks").task("only", member)
    net.run("x")
    assert fired == ["run:member"]
    net.on(TaskWatch)
    net.run("y")
    assert fired == ["run:member", "only", "run:member", "run:member"]


def test_members_write_the_shared_memory_as_themselves() -> None:
    # A task memory dict is set in the network memory by the task's robot (writer = its name).
    changes: list[MemoryChange] = []
    left = robot("left", {"content": "l"})
    right = robot("right", {"content": "r"})
    net = create_network(name="shared")
    net.memory.subscribe_pattern("vote:*", changes.append)
    net.task("left", left, memory={"vote:left": "yes"})
    net.task("right", right, memory={"vote:right": "no"})
    net.run("vote")
    assert net.memory.flush(2)
    assert sorted((c.key, c.value, c.writer) for c in changes) == [
        ("vote:left", "yes", "left"),
        ("vote:right", "no", "right"),
    ]
    assert all(c.network_name == "shared" for c in changes)
    assert net.memory.current_writer is None


def test_network_memory_is_what_the_robot_sees_in_hooks() -> None:
    seen: list[Any] = []

    class MemoryWatch(Hook):
        def before_run(self, ctx: Any) -> None:
            seen.append(ctx.memory)

    net = create_network(name="mem").task("t", robot("t", {"content": "1"}))
    net.on(MemoryWatch)
    net.run("x")
    assert seen == [net.memory]
