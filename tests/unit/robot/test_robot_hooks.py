"""Hooks (spec 19): registration levels, order, around nesting, errors, tool and generation
families."""

from __future__ import annotations

import pytest

import robotlab
from robotlab import ConfigError, Hook
from robotlab.hooks import HookRegistry
from robotlab.testing import ScriptedLLM


def recorder(label: str, log: list[str]) -> type[Hook]:
    class Recorder(Hook):
        namespace = label

        def before_run(self, ctx: object) -> None:
            log.append(f"before {label}")

        def around_run(self, ctx: object, block):  # type: ignore[no-untyped-def]
            log.append(f"enter {label}")
            value = block()
            log.append(f"leave {label}")
            return value

        def after_run(self, ctx: object) -> None:
            log.append(f"after {label}")

    return Recorder


def test_global_robot_and_per_run_order_and_around_nesting() -> None:
    log: list[str] = []
    robotlab.on(recorder("G", log))
    robot = robotlab.build(llm=ScriptedLLM([{"content": "ok"}])).on(recorder("R", log))
    robot.run("hi", hooks=recorder("P", log))
    assert log == ["before G", "before R", "before P", "enter G", "enter R", "enter P",
                   "leave P", "leave R", "leave G", "after G", "after R", "after P"]


def test_around_run_that_returns_nothing_makes_run_return_none() -> None:
    class Swallow(Hook):
        def around_run(self, ctx, block):  # type: ignore[no-untyped-def]
            block()

    robot = robotlab.build(llm=ScriptedLLM([{"content": "ok"}])).on(Swallow)
    assert robot.run("hi") is None


def test_on_run_error_sees_the_error_and_it_still_propagates() -> None:
    seen: list[BaseException] = []

    class Watch(Hook):
        def on_run_error(self, ctx) -> None:  # type: ignore[no-untyped-def]
            seen.append(ctx.error)

    robot = robotlab.build(llm=ScriptedLLM([{"error": {"status": 503,
                                                       "message": "down"}}])).on(Watch)
    with pytest.raises(robotlab.InferenceError):
        robot.run("hi")
    assert isinstance(seen[0], robotlab.InferenceError)


def test_task_hooks_on_a_robot_never_fire_outside_a_network() -> None:
    fired: list[str] = []

    class TaskWatch(Hook):
        def before_task(self, ctx: object) -> None:
            fired.append("task")

    robotlab.build(llm=ScriptedLLM([{"content": "ok"}])).on(TaskWatch).run("hi")
    assert fired == []


def test_llm_generation_fires_once_per_run_and_tool_call_once_per_tool() -> None:
    counts = {"gen": 0, "tool": 0}

    class Count(Hook):
        def before_llm_generation(self, ctx: object) -> None:
            counts["gen"] += 1

        def after_tool_call(self, ctx) -> None:  # type: ignore[no-untyped-def]
            counts["tool"] += 1
            assert ctx.tool_result == "r"

    tool = robotlab.Tool.create(name="t", handler=lambda args: "r")
    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}, {"name": "t"}]}, {"content": "ok"}])
    robotlab.build(local_tools=[tool], llm=llm).on(Count).run("go", tools="inherit")
    assert counts == {"gen": 1, "tool": 2}


def test_around_tool_call_can_skip_the_tool() -> None:
    ran: list[bool] = []

    class Block(Hook):
        def around_tool_call(self, ctx, block):  # type: ignore[no-untyped-def]
            ctx.tool_result = f"blocked {ctx.tool_name}"

    tool = robotlab.Tool.create(name="rm", handler=lambda args: ran.append(True))
    llm = ScriptedLLM([{"tool_calls": [{"name": "rm"}]}, {"content": "ok"}])
    robotlab.build(local_tools=[tool], llm=llm).on(Block).run("go", tools="inherit")
    assert ran == []
    assert llm.requests[1].tool_results() == ["blocked rm"]


def test_local_store_per_namespace_with_registration_defaults() -> None:
    seen: list[object] = []

    class AuditHook(Hook):
        def before_run(self, ctx) -> None:  # type: ignore[no-untyped-def]
            ctx.local.count = ctx.local.start + 1

        def after_run(self, ctx) -> None:  # type: ignore[no-untyped-def]
            seen.append((ctx.local.count, ctx.ext("audit_hook").count))

    assert AuditHook.hook_namespace() == "audit_hook"
    robot = robotlab.build(llm=ScriptedLLM([{"content": "ok"}])).on(
        AuditHook, context={"start": 41})
    robot.run("hi")
    assert seen == [(42, 42)]


def test_registration_rejects_non_hooks() -> None:
    class NotAHook:
        pass

    with pytest.raises(ConfigError):
        robotlab.on(NotAHook)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        robotlab.on(Hook)
    robotlab.on(recorder("x", []))
    assert len(robotlab.hooks()) == 1
    robotlab.clear_hooks()
    assert robotlab.hooks() == []


def test_a_robot_given_shared_hooks_reads_them_instead_of_the_process_wide_registry() -> None:
    log: list[str] = []

    def learner(label: str) -> type[Hook]:
        class Learner(recorder(label, log)):  # type: ignore[misc, valid-type]
            def on_learn(self, ctx: object) -> None:
                log.append(f"learn {label}")

        return Learner

    robotlab.on(learner("G"))
    shared = HookRegistry().on(learner("S"))
    apart = robotlab.build(name="apart", shared_hooks=shared,
                           llm=ScriptedLLM([{"content": "ok"}]))
    apart.run("hi")
    apart.learn("a lesson")
    assert [line for line in log if line.startswith(("before", "learn"))] == [
        "before S", "learn S"]
    log.clear()
    robotlab.build(name="default", llm=ScriptedLLM([{"content": "ok"}])).run("hi")
    assert [line for line in log if line.startswith("before")] == ["before G"]
