"""Network pipelines with in-process members (spec section 20).

The members here implement the member protocol directly (a name and ``run``), so each test
controls exactly when a step starts and ends; tests with real robots are in
test_network_robots.py.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import robotlab
from robotlab.errors import ConfigError
from robotlab.hooks.hooks import Hook, HookRegistry, global_hooks
from robotlab.network.flow import FlowResult, WaveRunner, plan_waves
from robotlab.network.network import Network, create_network
from robotlab.robot.result import RobotResult


class Member:
    """Replies ``<name>(<message>)``; optionally meets others at a barrier first, or raises."""

    def __init__(self, name: str, *, barrier: threading.Barrier | None = None,
                 error: Exception | None = None, gauge: Gauge | None = None) -> None:
        self.name = name
        self.barrier = barrier
        self.error = error
        self.gauge = gauge
        self.calls: list[tuple[Any, dict[str, Any]]] = []

    def run(self, message: Any = None, **kwargs: Any) -> RobotResult:
        self.calls.append((message, kwargs))
        if self.gauge:
            self.gauge.enter()
        try:
            if self.barrier:
                self.barrier.wait(timeout=2)
            if self.error:
                raise self.error
            return RobotResult(self.name, reply=f"{self.name}({message})")
        finally:
            if self.gauge:
                self.gauge.leave()


class Gauge:
    """Counts members running at once and remembers the peak."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


def test_pipeline_passes_each_reply_to_the_next_robot() -> None:
    # Acceptance check 1.
    a, b = Member("a"), Member("b")
    with create_network(name="pipe") as net:
        net.task("first", a)
        net.task("second", b, depends_on=["first"])
    result = net.run(message="hello")
    assert b.calls[0][0] == "a(hello)"
    assert result.reply == "b(a(hello))"
    assert set(result.context) == {"a", "b", "run_params"}
    assert result.context["a"].reply == "a(hello)"


def test_parallel_fan_out_then_fan_in() -> None:
    # Acceptance check 2: B and C meet at a barrier, which only works if they overlap.
    meet = threading.Barrier(2)
    a, b, c, d = Member("a"), Member("b", barrier=meet), Member("c", barrier=meet), Member("d")
    with create_network(name="fan") as net:
        net.task("a", a)
        net.task("b", b, depends_on=["a"])
        net.task("c", c, depends_on=["a"])
        net.task("d", d, depends_on=["b", "c"])
    result = net.run("go")
    assert not meet.broken
    assert d.calls[0][0] == "c(a(go))"  # the wave's value is its last step's
    assert set(result.context) >= {"a", "b", "c", "d"}
    assert net.execution_plan() == "wave 1: a\nwave 2: b, c\nwave 3: d"


def test_max_concurrent_robots_is_a_hard_cap() -> None:
    gauge = Gauge()
    members = [Member(f"m{i}", gauge=gauge) for i in range(4)]
    net = create_network(name="capped", config={"max_concurrent_robots": 1})
    for member in members:
        net.task(member.name, member)
    net.run("x")
    assert gauge.peak == 1
    assert all(m.calls for m in members)


def test_without_a_cap_a_wave_runs_together() -> None:
    meet = threading.Barrier(3)
    net = create_network(name="open")
    for i in range(3):
        net.task(f"t{i}", Member(f"m{i}", barrier=meet))
    net.run("x")
    assert not meet.broken


def test_optional_task_runs_only_when_activated() -> None:
    # Acceptance check 3.
    billing, general = Member("billing"), Member("general")

    def route(result: RobotResult, flow: FlowResult) -> str:
        return "billing" if "charge" in result.reply else "general"

    with create_network(name="support") as net:
        net.task("classifier", Member("classifier"), activate=route)
        net.task("billing", billing, depends_on="optional")
        net.task("general", general, optional=True, depends_on=["classifier"])
    result = net.run("a double charge")
    assert result.activated_steps == ("billing",)
    assert len(billing.calls) == 1 and general.calls == []
    assert "general" not in result.context
    assert net.to_h()["optional_tasks"] == ["billing", "general"]


def test_steps_behind_an_inactive_branch_are_skipped_but_fan_in_runs() -> None:
    follow_up, summary = Member("follow_up"), Member("summary")
    with create_network(name="routes") as net:
        net.task("classify", Member("classify"), activate=lambda r, f: ["left"])
        net.task("left", Member("left"), optional=True, depends_on=["classify"])
        net.task("right", Member("right"), optional=True, depends_on=["classify"])
        net.task("right_follow_up", follow_up, depends_on=["right"])
        net.task("summary", summary, depends_on=["left", "right"])
    net.run("x")
    assert follow_up.calls == []
    assert summary.calls[0][0] == "left(classify(x))"


def test_a_failing_member_yields_an_error_result_and_the_pipeline_goes_on() -> None:
    after = Member("after")
    with create_network(name="fails") as net:
        net.task("broken", Member("broken", error=ValueError("boom")))
        net.task("after", after, depends_on=["broken"])
    result = net.run("x")
    broken = result.context["broken"]
    assert broken.reply == "Error: ValueError: boom"
    assert broken.duration is not None
    assert after.calls[0][0] == "Error: ValueError: boom"
    assert result.errors == {"broken": ("ValueError: boom",)}


def test_task_context_and_tools_carry_forward() -> None:
    # Acceptance check 5: tools written upstream reach later tasks; [] undoes them.
    up, down, last = Member("up"), Member("down"), Member("last")
    with create_network(name="carry") as net:
        net.task("up", up, tools="inherit", context={"user": {"id": 1, "tier": "gold"}})
        net.task("down", down, depends_on=["up"], context={"user": {"tier": "silver"}})
        net.task("last", last, depends_on=["down"], tools=[])
    net.run("x", extra=7)
    assert up.calls[0][1]["tools"] == "inherit"
    assert down.calls[0][1]["tools"] == "inherit"
    assert down.calls[0][1]["user"] == {"id": 1, "tier": "silver"}
    assert down.calls[0][1]["extra"] == 7
    assert last.calls[0][1]["tools"] == []


def test_members_get_the_network_memory_and_config() -> None:
    member = Member("m")
    with create_network(name="cfg", config={"model": "net-model", "temperature": 0.2}) as net:
        net.task("t", member, config={"temperature": 0.9})
    net.run("x")
    kwargs = member.calls[0][1]
    assert kwargs["network"] is net
    assert kwargs["network_memory"] is net.memory
    assert kwargs["network_config"].model == "net-model"
    assert kwargs["network_config"].temperature == 0.9
    assert kwargs["task"].name == "t"


def test_a_network_with_more_tasks_than_max_iterations_is_refused_before_any_runs() -> None:
    members = [Member(f"m{i}") for i in range(3)]
    with create_network(name="big") as net:
        for member in members:
            net.task(member.name, member)
    robotlab.configure(max_iterations=2)
    try:
        refusal = r"^network 'big' has 3 tasks, more than the 2 robots max_iterations "
        with pytest.raises(ConfigError, match=refusal):
            net.run("x")
        assert [member.calls for member in members] == [[], [], []]
        robotlab.configure(max_iterations=3)
        assert net.run("x").reply == "m2(x)"
    finally:
        robotlab.reload_config()


def test_positional_and_keyword_message_are_the_same() -> None:
    member = Member("m")
    net = create_network(name="runnable").task("t", member)
    assert net.run("hi").reply == net.run(message="hi").reply == "m(hi)"
    assert net.run().reply == "m(None)"


def test_runnable_protocol_and_membership() -> None:
    # Acceptance check 4 and the Runnable checks of section 23.
    a, b = Member("a"), Member("b")
    net = create_network(name="crew").task("a", a).task("b", b, depends_on=["a"])
    assert net.crew == [a, b] and net.chief is a and net.robot_count == 2
    assert net.network() and not net.single()
    extra = Member("extra")
    assert net.add_robot(extra) is net
    with pytest.raises(Exception, match="Robot 'extra' already exists in network 'crew'"):
        net.add_robot(extra)
    assert net["extra"] is extra
    assert net.remove_robot("extra") is extra
    assert net.remove_robot("extra") is None
    assert net.to_h() == {"name": "crew", "robots": ["a", "b"], "tasks": ["a", "b"],
                          "optional_tasks": [], "config": {}}


def test_network_and_task_hooks_fire_from_the_network_registry() -> None:
    seen: list[str] = []

    class Audit(Hook):
        def before_network_run(self, ctx: Any) -> None:
            seen.append("network")

        def before_task(self, ctx: Any) -> None:
            seen.append(f"task:{ctx.task_name}")

        def after_task(self, ctx: Any) -> None:
            seen.append(f"done:{ctx.result.reply}")

    net = create_network(name="hooked").task("a", Member("a")).task(
        "b", Member("b"), depends_on=["a"])
    net.on(Audit)
    net.run("x")
    assert seen == ["network", "task:a", "done:a(x)", "task:b", "done:b(a(x))"]


def test_a_network_given_shared_hooks_reads_them_instead_of_the_process_wide_registry() -> None:
    seen: list[str] = []

    def audit(label: str) -> type[Hook]:
        class Audit(Hook):
            namespace = label

            def before_network_run(self, ctx: Any) -> None:
                seen.append(f"{label} network")

            def before_task(self, ctx: Any) -> None:
                seen.append(f"{label} task:{ctx.task_name}")

        return Audit

    process_wide = audit("global")
    robotlab.on(process_wide)
    try:
        apart = Network("apart", shared_hooks=HookRegistry().on(audit("shared")))
        apart.task("a", Member("a")).run("x")
        assert seen == ["shared network", "shared task:a"]
        seen.clear()
        create_network(name="default").task("a", Member("a")).run("x")
        assert seen == ["global network", "global task:a"]
    finally:
        global_hooks().remove(lambda handler: isinstance(handler, process_wide))


def test_broadcast_reaches_handlers_and_memory_subscribers() -> None:
    net = create_network(name="radio")
    heard: list[dict[str, Any]] = []
    changes: list[Any] = []
    got = threading.Event()

    def handler(message: dict[str, Any]) -> None:
        heard.append(message)
        got.set()

    net.on_broadcast(handler)
    net.on_broadcast(lambda message: 1 / 0)  # a failing handler is logged, not raised
    net.memory.subscribe("_network_broadcast", callback=changes.append)
    assert net.broadcast({"alert": "stop"}) is net
    assert got.wait(2)
    assert heard[0]["payload"] == {"alert": "stop"} and heard[0]["network"] == "radio"
    net.memory.flush(2)
    assert changes[0].value["payload"] == {"alert": "stop"}
    with pytest.raises(TypeError):
        net.on_broadcast()


def test_create_network_takes_only_its_keywords() -> None:
    with pytest.raises(TypeError):
        create_network(name="n", robots=[])  # type: ignore[call-arg]
    with pytest.raises(Exception, match="concurrency"):
        create_network(name="n", concurrency="fibers")


def test_wave_runner_stops_at_a_halted_step() -> None:
    ran: list[str] = []

    def step(name: str, halt: bool = False):
        def call(result: FlowResult) -> FlowResult:
            ran.append(name)
            out = result.continue_(name)
            return out.halt() if halt else out

        return call

    deps = {"a": (), "b": ("a",), "c": ("b",)}
    runner = WaveRunner(plan_waves(deps),
                        {"a": step("a"), "b": step("b", halt=True), "c": step("c")}, deps)
    result = runner.run(FlowResult())
    assert ran == ["a", "b"]
    assert result.halted and not result.is_continue() and result.value == "b"


def test_flow_result_is_immutable_and_plain() -> None:
    base = FlowResult(value=1)
    changed = base.with_context("k", RobotResult("r", reply="hi"))
    changed = changed.with_error("t", "bad").activate("x", "x")
    assert base.context == {} and base.errors == {} and base.activated_steps == ()
    assert changed.activated_steps == ("x",)
    plain = changed.to_dict()
    assert plain["context"]["k"]["reply"] == "hi"
    assert plain["errors"] == {"t": ["bad"]}


def test_an_around_task_hook_can_activate_optional_tasks() -> None:
    class Router(Hook):
        def around_task(self, ctx: Any, inner: Any) -> Any:
            result = inner()
            return result.activate("extra") if ctx.task_name == "first" else result

    extra = Member("extra")
    net = create_network(name="routed").task("first", Member("first")).task(
        "extra", extra, optional=True)
    net.on(Router)
    assert net.run("x").activated_steps == ("extra",)
    assert extra.calls[0][0] == "first(x)"
