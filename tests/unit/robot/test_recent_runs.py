"""``RecentRuns``: what a robot keeps of its runs for ``robotlab runs`` and the web console."""

from __future__ import annotations

import pytest

import robotlab
from robotlab import tool
from robotlab.errors import InferenceError
from robotlab.robot.recent_runs import KEPT, RecentRuns, answer_runs, trim
from robotlab.testing import ScriptedLLM


@tool
def look(where: str) -> str:
    """Look somewhere.

    Args:
        where: the place.
    """
    return "a cat " * 200


def test_a_run_is_kept_with_its_prompt_tool_call_words_and_spending() -> None:
    llm = ScriptedLLM([
        {"tool_calls": [{"name": "look", "arguments": {"where": "garden"}}],
         "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
        {"content": "A cat.", "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
    ])
    robot = robotlab.build(name="bob", local_tools=[look], llm=llm)
    kept = RecentRuns.of(robot, priced=lambda: False)
    robot.run("What is in the garden?", tools="inherit")

    [run] = answer_runs(robot, {"last": 5})["runs"]
    assert (run["status"], run["reply"]) == ("done", "A cat.")
    assert run["prompt"] == "What is in the garden?"
    [call] = run["tool_calls"]
    assert (call["name"], call["arguments"]) == ("look", '{"where": "garden"}')
    assert call["result"].startswith("a cat a cat") and call["result"].endswith("more characters)")
    assert (run["tokens_in"], run["tokens_out"], run["cost"]) == (14, 5, "unknown")
    assert run["seconds"] >= 0 and run["error"] is None
    assert kept.read(0) == []


def test_a_failed_run_is_kept_with_its_error_and_only_the_last_runs_stay() -> None:
    down = {"error": {"status": 400, "message": "the provider is down"}}
    replies = [{"content": f"r{n}"} for n in range(KEPT + 2)]
    robot = robotlab.build(name="bob", llm=ScriptedLLM([down, *replies]))
    kept = RecentRuns.of(robot)
    with pytest.raises(InferenceError):
        robot.run("first")
    [failed] = kept.read()
    assert failed["status"] == "failed" and "the provider is down" in failed["error"]
    for n in range(KEPT + 2):
        robot.run(f"m{n}")

    runs = kept.read()
    assert len(runs) == KEPT and runs[0]["prompt"] == f"m{KEPT + 1}" and runs[-1]["prompt"] == "m2"


def test_a_robot_without_a_record_says_so() -> None:
    robot = robotlab.build(name="bob", llm=ScriptedLLM([]))
    assert answer_runs(robot, {})["error"]["message"] == (
        "robot 'bob' keeps no record of its runs (a robot hosted by robotd does)")


def test_trim_keeps_short_texts_and_says_how_much_was_cut() -> None:
    assert (trim(None, 3), trim("abc", 3), trim({"a": 1}, 20)) == (None, "abc", '{"a": 1}')
    assert trim("abcdef", 3) == "abc… (3 more characters)"
