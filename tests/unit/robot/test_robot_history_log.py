"""The conversation as an append-only, versioned log saved after every step (STYLE principle 9)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import robotlab
from robotlab import ConfigError, Robot, RunConfig, ToolLoopError
from robotlab.history.log import FORMAT, KINDS, HistoryLog, TaskEntry, entry_from_dict, render
from robotlab.testing import ScriptedLLM


def saved(path: Path) -> list[dict[str, Any]]:
    header, *lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(header)["format"] == FORMAT
    return [json.loads(line) for line in lines]


def kinds(path: Path) -> list[str]:
    return [entry["kind"] for entry in saved(path)]


def call(name: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments, "id": call_id}]}


def test_a_run_is_saved_as_typed_entries_and_rendered_as_chat_messages(tmp_path: Path) -> None:
    path = tmp_path / "bob.json"
    add = robotlab.Tool.create(name="add", parameters={"properties": {"a": {"type": "integer"}}},
                               handler=lambda args: args["a"] + 1)
    llm = ScriptedLLM([call("add", a=1), {"content": "it is 2"}])
    robot = Robot(name="bob", system_prompt="Be exact.", local_tools=[add], llm=llm,
                  history_path=str(path))
    robot.run("one plus one?", tools="inherit")
    assert kinds(path) == ["system", "task", "reply", "tool_call", "tool_result", "reply", "exit"]
    entries = saved(path)
    assert entries[3]["arguments"] == {"a": 1} and entries[4]["content"] == "2"
    assert entries[-1]["status"] == "completed" and entries[-1]["reply"] == "it is 2"
    assert {entry["run"] for entry in entries} == {1}
    assert [m["role"] for m in robot.messages] == ["system", "user", "assistant", "tool",
                                                   "assistant"]
    assert robot.messages[2]["tool_calls"][0]["function"]["name"] == "add"
    assert robot.messages[2]["content"] is None
    assert llm.requests[1].messages == robot.messages[:4]


def test_every_step_is_on_disk_before_the_next_one_starts(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    seen: list[list[str]] = []
    peek = robotlab.Tool.create(name="peek", handler=lambda args: seen.append(kinds(path)) or "ok")
    llm = ScriptedLLM([{"content": None, **call("peek", "c1")}, call("peek", "c2"),
                       {"content": "done"}])
    Robot(local_tools=[peek], llm=llm, history_path=path).run("look", tools="inherit")
    assert seen == [["task", "reply", "tool_call"],
                    ["task", "reply", "tool_call", "tool_result", "reply", "tool_call"]]


def test_a_robot_built_from_a_saved_history_continues_the_conversation(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    Robot(system_prompt="S", llm=ScriptedLLM([{"content": "hello"}]), history_path=path).run("hi")
    llm = ScriptedLLM([{"content": "again"}])
    robot = Robot(llm=llm, history_path=path)
    assert robot.system_prompt == "S"
    robot.run("and now?")
    assert [(m["role"], m["content"]) for m in llm.requests[0].messages] == [
        ("system", "S"), ("user", "hi"), ("assistant", "hello"), ("user", "and now?")]
    assert [e["run"] for e in saved(path) if e["kind"] == "exit"] == [1, 2]
    assert kinds(path).count("system") == 1


def test_an_interrupted_run_is_on_disk_up_to_its_last_step_and_closed_as_interrupted(
        tmp_path: Path) -> None:
    path = tmp_path / "h.json"

    def interrupt(args: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    stop = robotlab.Tool.create(name="stop", handler=interrupt)
    robot = Robot(local_tools=[stop], llm=ScriptedLLM([{"content": "first"}, call("stop")]),
                  history_path=path)
    robot.run("one")
    with pytest.raises(KeyboardInterrupt):
        robot.run("two", tools="inherit")
    assert kinds(path) == ["task", "reply", "exit", "task", "reply", "tool_call", "exit"]
    assert saved(path)[-1] == {**saved(path)[-1], "status": "interrupted", "run": 2,
                               "error": "KeyboardInterrupt: "}
    assert [m["content"] for m in robot.messages] == ["one", "first"]
    assert Robot(llm=ScriptedLLM([]), history_path=path).messages == robot.messages


def test_a_log_cut_off_mid_run_loads_with_that_run_closed_as_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    robot = Robot(llm=ScriptedLLM([{"content": "first"}]), history_path=path)
    robot.run("one")
    robot.conversation.log.begin_run(None)
    robot.conversation.log.append(TaskEntry(content="cut off here"))
    loaded = HistoryLog.load(path)
    assert [e.kind for e in loaded.entries][-2:] == ["task", "exit"]
    assert loaded.entries[-1].status == "interrupted"  # type: ignore[attr-defined]
    llm = ScriptedLLM([{"content": "second"}])
    again = Robot(llm=llm, history_path=path)
    again.run("two")
    assert [m["content"] for m in llm.requests[0].messages] == ["one", "first", "two"]
    assert [e["run"] for e in saved(path) if e["kind"] == "task"] == [1, 2, 3]


def test_a_failed_run_is_kept_in_the_log_but_not_in_the_messages(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    noop = robotlab.Tool.create(name="noop", handler=lambda args: "ok")
    robot = Robot(local_tools=[noop], max_tool_rounds=0, history_path=path,
                  llm=ScriptedLLM([call("noop"), {"content": "after"}]))
    with pytest.raises(ToolLoopError):
        robot.run("loop", tools="inherit")
    assert saved(path)[-1]["status"] == "failed" and saved(path)[-1]["error"].startswith(
        "ToolLoopError: ")
    assert robot.messages == []
    assert robot.run("fine").reply == "after"
    assert [m["content"] for m in robot.messages] == ["fine", "after"]


def test_rewrites_are_appended_and_rendering_starts_at_the_last_one(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    robot = Robot(llm=ScriptedLLM([{"content": "a"}, {"content": "b"}]), history_path=path)
    robot.run("1")
    robot.replace_messages([{"role": "system", "content": "new"}, {"role": "user", "content": "x"}])
    assert robot.messages == [{"role": "system", "content": "new"},
                              {"role": "user", "content": "x"}]
    robot.clear_messages()
    robot.run("2")
    assert [e["reason"] for e in saved(path) if e["kind"] == "rewrite"] == ["replace", "clear"]
    assert [m["content"] for m in robot.messages] == ["new", "2", "b"]
    assert kinds(path)[:3] == ["task", "reply", "exit"]


def test_without_a_path_nothing_is_written_and_the_log_still_renders(tmp_path: Path) -> None:
    robot = Robot(llm=ScriptedLLM([{"content": "a"}]))
    robot.run("1")
    assert robot.conversation.path is None and list(tmp_path.iterdir()) == []
    assert [e.kind for e in robot.conversation.log.entries] == ["task", "reply", "exit"]


def test_history_path_comes_from_run_config_too(tmp_path: Path) -> None:
    robot = Robot(config=RunConfig(history_path=tmp_path / "c.json"),
                  llm=ScriptedLLM([{"content": "a"}]))
    robot.run("1")
    assert robot.config.history_path == str(tmp_path / "c.json")
    assert kinds(tmp_path / "c.json") == ["task", "reply", "exit"]


def test_an_unwritable_or_foreign_file_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot write the history file"):
        Robot(history_path=blocker / "h.json")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": 99, "entries": []}))
    with pytest.raises(ConfigError, match="format 2 or 1"):
        Robot(history_path=other)
    other.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read"):
        Robot(history_path=other)


def test_every_entry_kind_round_trips_and_unknown_kinds_are_refused() -> None:
    log = HistoryLog()
    log.begin_run("S")
    log.append(TaskEntry(content="t"))
    log.rewrite([{"role": "user", "content": "r"}], "replace")
    log.end_run(ValueError("bad"))
    rebuilt = [entry_from_dict(e.to_dict()) for e in log.entries]
    assert rebuilt == list(log.entries)
    assert render(rebuilt) == [{"role": "user", "content": "r"}]
    assert set(KINDS) == {"system", "task", "reply", "tool_call", "tool_result", "exit", "rewrite"}
    with pytest.raises(ConfigError, match="unknown history entry kind"):
        entry_from_dict({"kind": "dream"})
    with pytest.raises(ConfigError, match="bad task history entry"):
        entry_from_dict({"kind": "task", "colour": "red"})
