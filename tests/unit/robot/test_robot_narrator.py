"""The Narrator hook (spec 19): one line per generation, tool call and failed tool call."""

from __future__ import annotations

import io
import sys

import pytest

import robotlab
from robotlab import Narrator, Robot
from robotlab.hooks.narrator import clip
from robotlab.testing import ScriptedLLM


def calls(*pairs: tuple[str, dict[str, object]]) -> dict[str, object]:
    return {"tool_calls": [{"name": n, "arguments": a, "id": f"c{i}"}
                           for i, (n, a) in enumerate(pairs)]}


def failing(args: dict[str, object]) -> str:
    raise RuntimeError("disk full")


def robot(*turns: dict[str, object]) -> Robot:
    write = robotlab.Tool.create(name="write", parameters={"properties": {"path": {}, "text": {}}},
                                 handler=lambda args: "ok")
    boom = robotlab.Tool.create(name="boom", handler=failing)
    return Robot(name="planner", local_tools=[write, boom],
                 llm=ScriptedLLM([*turns, {"content": "done"}]))


def test_it_narrates_thinking_each_tool_call_and_each_failure() -> None:
    out = io.StringIO()
    Narrator.enable(output=out)
    robot(calls(("write", {"path": "a.txt", "text": "hi"}),
                ("boom", {}))).run("go", tools="inherit")
    assert out.getvalue().splitlines() == [
        "  · planner: thinking…",
        '  · → write path="a.txt"',
        "  · → boom",
        "  ·   ✗ disk full",
    ]


def test_long_lines_are_clipped_to_80_characters() -> None:
    out = io.StringIO()
    Narrator.enable(output=out)
    robot(calls(("write", {"path": "x" * 200}))).run("go", tools="inherit")
    line = out.getvalue().splitlines()[1]
    assert len(line) == 80 and line.startswith('  · → write path="xxx') and line.endswith("…")
    assert clip("a\nb") == "a b" and clip("short") == "short"


def test_enabling_twice_registers_once_and_disable_removes_it() -> None:
    first, second = io.StringIO(), io.StringIO()
    Narrator.enable(output=first)
    Narrator.enable(output=second)
    assert sum(isinstance(h, Narrator) for h in robotlab.hooks()) == 1
    robot().run("go")
    assert first.getvalue() == "" and second.getvalue() == "  · planner: thinking…\n"
    Narrator.disable()
    assert not any(isinstance(h, Narrator) for h in robotlab.hooks())
    robot().run("again")
    assert second.getvalue().count("thinking") == 1


def test_its_own_errors_never_reach_the_robot() -> None:
    closed = io.StringIO()
    closed.close()
    Narrator.enable(output=closed)
    assert robot(calls(("write", {"path": "a.txt"}))).run("go", tools="inherit").reply == "done"


def test_the_default_stream_is_stderr_at_the_time_of_writing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    Narrator.enable()
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    robot().run("go")
    assert err.getvalue() == "  · planner: thinking…\n"
