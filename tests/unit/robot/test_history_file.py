"""The conversation log's file: appended at every step, torn lines survived, format 1 still read."""

from __future__ import annotations

import errno
import json
import logging
from pathlib import Path

import pytest

from robotlab import ConfigError, Robot
from robotlab.history import log_file
from robotlab.history.entries import ExitEntry, ReplyEntry, TaskEntry
from robotlab.history.log import HistoryLog
from robotlab.testing import ScriptedLLM


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_step_appends_its_own_lines_and_leaves_what_was_written_before_as_it_was(
        tmp_path: Path) -> None:
    path = tmp_path / "bob.history"
    robot = Robot(name="bob", llm=ScriptedLLM([{"content": "a"}, {"content": "b"},
                                               {"content": "c"}]), history_path=path)
    before = path.read_bytes()
    for task in ("one", "two", "three"):
        robot.run(task)
        after = path.read_bytes()
        assert after.startswith(before) and after.endswith(b"\n")
        assert [line["kind"] for line in lines(path)[len(before.splitlines()):]] == [
            "task", "reply", "exit"]
        before = after
    assert lines(path)[0] == {"format": log_file.FORMAT, "robot": "bob"}


def test_a_line_torn_by_a_kill_is_dropped_and_the_file_written_whole_when_opened_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "bob.history"
    Robot(llm=ScriptedLLM([{"content": "first"}]), history_path=path).run("one")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"kind": "task", "run": 2, "at": 1.0, "content": "cut o')
    with caplog.at_level(logging.WARNING, "robotlab.history"):
        robot = Robot(llm=ScriptedLLM([{"content": "second"}]), history_path=path)
    assert "its last line was cut off mid-write" in caplog.text
    assert [m["content"] for m in robot.messages] == ["one", "first"]
    robot.run("two")
    assert [line.get("content") for line in lines(path)[1:] if line["kind"] == "task"] == [
        "one", "two"]
    assert [m["content"] for m in HistoryLog.load(path).messages()] == [
        "one", "first", "two", "second"]


def test_a_damaged_line_inside_the_file_is_a_config_error_that_names_it(tmp_path: Path) -> None:
    path = tmp_path / "bob.history"
    Robot(llm=ScriptedLLM([{"content": "a"}, {"content": "b"}]), history_path=path).run("one")
    text = path.read_text(encoding="utf-8").splitlines()
    text[2] = text[2][:10]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 3: .*one JSON object a line"):
        Robot(history_path=path)


def test_a_format_1_file_is_read_and_written_again_as_format_2(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    entries = [TaskEntry(run=1, content="hi"), ReplyEntry(run=1, content="hello"),
               ExitEntry(run=1, status="completed", reply="hello")]
    path.write_text(json.dumps({"format": 1, "robot": "bob",
                                "entries": [e.to_dict() for e in entries]}, indent=1))
    llm = ScriptedLLM([{"content": "again"}])
    robot = Robot(name="bob", llm=llm, history_path=path)
    robot.run("and now?")
    assert [m["content"] for m in llm.requests[0].messages] == ["hi", "hello", "and now?"]
    assert lines(path)[0] == {"format": 2, "robot": "bob"}
    assert [line["run"] for line in lines(path)[1:] if line["kind"] == "exit"] == [1, 2]


def test_an_append_the_disk_refuses_is_logged_and_the_next_step_writes_the_file_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "bob.history"
    robot = Robot(llm=ScriptedLLM([{"content": "a"}, {"content": "b"}]), history_path=path)
    real_append = log_file.append

    def disk_full(target: Path, entries: object) -> None:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write('{"kind": "ta')  # what fit before the disk filled up
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(log_file, "append", disk_full)
    with caplog.at_level(logging.WARNING, "robotlab.history"):
        robot.run("one")
    assert "No space left on device" in caplog.text
    monkeypatch.setattr(log_file, "append", real_append)
    robot.run("two")
    assert [line["kind"] for line in lines(path)[1:]] == ["task", "reply", "exit"] * 2
