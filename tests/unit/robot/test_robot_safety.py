"""Budgets and loop safety (spec 9, 10): the ledger, token and cost budgets, the circuit breaker,
doom loops."""

from __future__ import annotations

import math
import threading

import pytest

import robotlab
from robotlab import BudgetExceeded, InferenceError, Ledger, ToolLoopError
from robotlab.llm import LLMReply, Usage
from robotlab.robot.doom_loop import DoomLoopDetector
from robotlab.testing import ScriptedLLM

SIXTY = {"content": "x", "usage": {"prompt_tokens": 40, "completion_tokens": 20}}


def test_token_budget_call_crossing_raises_inference_error_then_refuses() -> None:
    llm = ScriptedLLM([SIXTY, SIXTY, SIXTY])
    robot = robotlab.build(token_budget=100, llm=llm)
    robot.run("1")
    with pytest.raises(InferenceError,
                       match="Token budget exceeded: 120 tokens used, budget is 100"):
        robot.run("2")
    assert len(llm.requests) == 2
    with pytest.raises(BudgetExceeded):
        robot.run("3")
    assert len(llm.requests) == 2


def test_usage_exactly_at_the_limit_still_lets_the_next_call_through() -> None:
    llm = ScriptedLLM([SIXTY, SIXTY])
    robot = robotlab.build(token_budget=60, llm=llm)
    robot.run("1")
    with pytest.raises(InferenceError):
        robot.run("2")
    assert len(llm.requests) == 2


def test_a_failed_call_releases_its_reservation() -> None:
    llm = ScriptedLLM([{"error": {"status": 500, "message": "down"}}, SIXTY])
    robot = robotlab.build(token_budget=100, llm=llm)
    with pytest.raises(InferenceError, match="down"):
        robot.run("1")
    assert robot.budget_ledger.remaining("tokens") == 100
    assert robot.run("2").reply == "x"


def test_reset_token_totals_resets_the_ledger_too() -> None:
    robot = robotlab.build(token_budget=100, llm=ScriptedLLM([SIXTY, SIXTY, SIXTY]))
    robot.run("1")
    with pytest.raises(InferenceError):
        robot.run("2")
    robot.reset_token_totals()
    assert (robot.total_input_tokens, robot.budget_ledger.remaining("tokens")) == (0, 100)
    assert robot.run("3").reply == "x"


def test_tokens_of_every_round_trip_are_counted() -> None:
    tool = robotlab.Tool.create(name="t", handler=lambda args: "r")
    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}],
                        "usage": {"prompt_tokens": 30, "completion_tokens": 10}}, SIXTY])
    result = robotlab.build(local_tools=[tool], llm=llm).run("go", tools="inherit")
    assert (result.input_tokens, result.output_tokens) == (70, 30)


class PricedLLM(ScriptedLLM):
    """A scripted model whose replies cost 0.3 dollars each."""

    def complete(self, messages, tools, params, on_chunk=None):  # type: ignore[no-untyped-def]
        reply = super().complete(messages, tools, params, on_chunk)
        return LLMReply(reply.content, reply.tool_calls, reply.reasoning, reply.usage, 0.3,
                        reply.model)


def test_cost_budget_crossing_raises_then_refuses() -> None:
    llm = PricedLLM([{"content": "a"}, {"content": "b"}, {"content": "c"}])
    robot = robotlab.build(cost_budget=0.5, llm=llm)
    assert robot.run("1").cost == 0.3
    with pytest.raises(InferenceError,
                       match=r"Cost budget exceeded: \$0.600000 used, budget is \$0.500000"):
        robot.run("2")
    with pytest.raises(BudgetExceeded):
        robot.run("3")
    assert len(llm.requests) == 2


def test_cost_budget_never_trips_without_prices() -> None:
    big = {"content": "x", "usage": {"prompt_tokens": 100000, "completion_tokens": 100000}}
    robot = robotlab.build(cost_budget=0.01, llm=ScriptedLLM([big, big, big]))
    for _ in range(3):
        robot.run("again")
    assert robot.budget_ledger.consumed("cost") == 0


def test_ledger_messages_and_remaining() -> None:
    ledger = Ledger(limits={"cost": 0.5}, consumed={"cost": 0.62})
    with pytest.raises(BudgetExceeded, match=r"^budget exceeded for cost: 0.62 > 0.5$"):
        ledger.reserve("cost", 0)
    assert ledger.remaining("tokens") == math.inf
    assert ledger.remaining("cost") == 0


def test_ledger_reserve_reconcile_release() -> None:
    ledger = Ledger(limits={"tokens": 100})
    ledger.reserve("tokens", 60)
    assert ledger.remaining("tokens") == 40
    ledger.reconcile("tokens", 60, 25)
    assert (ledger.consumed("tokens"), ledger.remaining("tokens")) == (25, 75)
    ledger.reserve("tokens", 10)
    ledger.release("tokens", 50)
    assert ledger.reserved("tokens") == 0
    ledger.reserve("unlimited", 10**9)


def test_ledger_is_thread_safe() -> None:
    ledger = Ledger(limits={"tokens": 1000})

    def spend() -> None:
        for _ in range(100):
            ledger.reserve("tokens", 1)
            ledger.reconcile("tokens", 1, 1)

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert ledger.consumed("tokens") == 800


def test_circuit_breaker_trips_before_the_extra_tool_runs() -> None:
    runs: list[int] = []
    tool = robotlab.Tool.create(name="t", handler=lambda args: runs.append(1) or "ok")
    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}]}] * 3 + [{"content": "never"}])
    robot = robotlab.build(local_tools=[tool], max_tool_rounds=2, llm=llm)
    with pytest.raises(ToolLoopError, match=r"3 tool calls exceeded max_tool_rounds \(2\)"):
        robot.run("go", tools="inherit")
    assert len(runs) == 2
    assert robot.messages == []


def test_a_robot_without_max_tool_rounds_is_bounded_by_max_tool_iterations() -> None:
    runs: list[int] = []
    tool = robotlab.Tool.create(name="t", handler=lambda args: runs.append(1) or "ok")
    robotlab.configure(max_tool_iterations=2)
    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}]}] * 3 + [{"content": "never"}])
    with pytest.raises(ToolLoopError, match=r"3 tool calls exceeded max_tool_iterations \(2\)"):
        robotlab.build(local_tools=[tool], llm=llm).run("go", tools="inherit")
    assert len(runs) == 2


def test_a_robot_s_own_max_tool_rounds_wins_and_null_means_no_bound() -> None:
    tool = robotlab.Tool.create(name="t", handler=lambda args: "ok")
    turns = [{"tool_calls": [{"name": "t"}]}] * 12 + [{"content": "done"}]
    assert robotlab.build(local_tools=[tool], max_tool_rounds=12, llm=ScriptedLLM(turns)).run(
        "go", tools="inherit").reply == "done"
    with pytest.raises(ToolLoopError, match=r"11 tool calls exceeded max_tool_iterations \(10\)"):
        robotlab.build(local_tools=[tool], llm=ScriptedLLM(turns)).run("go", tools="inherit")
    robotlab.configure(max_tool_iterations=None)
    unbounded = robotlab.build(local_tools=[tool], llm=ScriptedLLM(turns))
    assert unbounded.run("go", tools="inherit").reply == "done"


def test_the_robot_is_reusable_after_the_breaker_tripped() -> None:
    tool = robotlab.Tool.create(name="t", handler=lambda args: "ok")
    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}, {"name": "t"}]}, {"content": "fine"}])
    robot = robotlab.build(local_tools=[tool], max_tool_rounds=1, llm=llm)
    with pytest.raises(ToolLoopError):
        robot.run("go", tools="inherit")
    assert robot.run("again").reply == "fine"
    assert [m["role"] for m in llm.requests[-1].messages] == ["user"]


@pytest.mark.parametrize(
    ("names", "expected"),
    [(["a", "a", "a"], True), (["a", "b", "a", "b", "a", "b"], True), (["a", "b", "c", "a"], False),
     (["a", "a"], False), ([], False)],
)
def test_doom_loop_detector(names: list[str], expected: bool) -> None:
    detector = DoomLoopDetector(3)
    for name in names:
        detector.track(name)
    assert detector.doom_loop() is expected


def test_cycle_warning_names_the_pattern() -> None:
    detector = DoomLoopDetector(2)
    for name in ["a", "b", "a", "b"]:
        detector.track(name)
    assert detector.warning() is not None and "[a → b]" in detector.warning()


def test_doom_loop_warning_reaches_the_model_inside_the_third_result() -> None:
    search = robotlab.Tool.create(name="search", handler=lambda args: "no results")
    llm = ScriptedLLM([{"tool_calls": [{"name": "search"}]}] * 3 + [{"content": "giving up"}])
    result = robotlab.build(local_tools=[search], llm=llm).run("find", tools="inherit")
    assert result.reply == "giving up"
    results = llm.requests[3].tool_results()
    assert results[:2] == ["no results", "no results"]
    assert results[2].startswith(
        "no results\n\n⚠️ Tool 'search' has been called 3+ times consecutively")


def test_doom_loop_warning_is_a_key_of_dict_results() -> None:
    lookup = robotlab.Tool.create(name="lookup", handler=lambda args: {"hits": 0})
    llm = ScriptedLLM([{"tool_calls": [{"name": "lookup"}]}] * 2 + [{"content": "done"}])
    robotlab.build(local_tools=[lookup], doom_loop_threshold=2,
                   llm=llm).run("find", tools="inherit")
    assert '"_doom_loop_warning"' in llm.requests[2].tool_results()[1]


def test_usage_type_defaults() -> None:
    assert Usage() == Usage(0, 0)
