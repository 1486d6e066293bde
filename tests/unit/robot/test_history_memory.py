"""A long night's log holds what rendering needs in memory, and loses nothing: checked against a
log that keeps everything in memory, step by step, with a file (a disk that fails now and then
included) and without one."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robotlab import Robot
from robotlab.history import log_file
from robotlab.history.entries import Entry, ExitEntry, ReplyEntry, TaskEntry
from robotlab.history.log import HistoryLog
from robotlab.testing import ScriptedLLM

EVERYTHING = 10**9
"""A bound no test reaches: the reference log keeps every entry in memory."""

# a run (its task, reply and exit), a rewrite of the conversation, or a run the disk refuses
steps = st.lists(st.sampled_from(["run", "run", "run", "rewrite", "disk full"]), max_size=40)


def run(log: HistoryLog, number: int) -> None:
    log.begin_run(None)
    log.append(TaskEntry(content=f"q{number}"), ReplyEntry(content=f"a{number}"))
    log.end_run(None, f"a{number}")


def step(log: HistoryLog, reference: HistoryLog, what: str, number: int) -> None:
    if what == "rewrite":
        kept = log.messages()[-2:]  # what a served robot keeps of a conversation: its newest
        log.rewrite(kept, "window")
        reference.rewrite(kept, "window")
    else:
        run(log, number)
        run(reference, number)


def same(entries: tuple[Entry, ...]) -> list[dict]:
    return [{k: v for k, v in entry.to_dict().items() if k != "at"} for entry in entries]


def disk_full(target: Path, entries: object) -> None:
    with open(target, "a", encoding="utf-8") as handle:
        handle.write('{"kind": "ta')  # what fit before the disk filled up
    raise OSError(errno.ENOSPC, "No space left on device")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps)
def test_a_log_with_a_file_holds_only_its_conversation_and_reads_back_every_entry(
        tmp_path_factory: pytest.TempPathFactory, plan: list[str]) -> None:
    path = tmp_path_factory.mktemp("history") / "bob.history"
    log, reference = HistoryLog.open(path, "bob"), HistoryLog(None, "bob", kept=EVERYTHING)
    real_append = log_file.append
    for number, what in enumerate(plan):
        if what == "disk full":  # one run's lines are refused, torn: the next step rewrites
            log_file.append = disk_full  # type: ignore[assignment]
            try:
                step(log, reference, "run", number)
            finally:
                log_file.append = real_append
            continue
        step(log, reference, what, number)
        # Then memory holds the conversation since the last rewrite, no more
        assert log.held == len(reference.entries) - last_rewrite(reference.entries)
        assert log.messages() == reference.messages()
    # And every entry is there: in the log, and in the file read back (torn lines aside)
    assert same(log.entries) == same(reference.entries)
    if plan and plan[-1] != "disk full":
        assert same(HistoryLog.load(path).entries) == same(reference.entries)


def last_rewrite(entries: tuple[Entry, ...]) -> int:
    return max((i for i, e in enumerate(entries) if e.kind == "rewrite"), default=0)


@settings(max_examples=40, deadline=None)
@given(steps, st.integers(min_value=0, max_value=8))
def test_a_log_without_a_file_keeps_its_newest_entries_before_the_last_rewrite(
        plan: list[str], kept: int) -> None:
    log, reference = HistoryLog(None, "bob", kept=kept), HistoryLog(None, "bob", kept=EVERYTHING)
    for number, what in enumerate(plan):
        step(log, reference, "run" if what == "disk full" else what, number)
        everything = reference.entries
        since = last_rewrite(everything)
        # Then it holds every entry since the last rewrite and the newest `kept` before it
        assert same(log.entries) == same(everything[max(since - kept, 0):])
        assert log.messages() == reference.messages()


def test_a_robot_serving_all_night_holds_a_log_of_bounded_size(tmp_path: Path) -> None:
    # Given a robot with a history file, and one without, answering 300 tasks, their
    # conversations cleared every 10 tasks (as a served robot's is when it outgrows its window)
    replies = [{"content": f"a{n}"} for n in range(300)]
    filed = Robot(name="bob", llm=ScriptedLLM(replies), history_path=tmp_path / "bob.history")
    unfiled = Robot(name="ann", llm=ScriptedLLM(replies))
    unfiled.conversation.log.kept = 50
    for number in range(300):
        for robot in (filed, unfiled):
            robot.run(f"q{number}")
            if number % 10 == 9:
                robot.clear_messages()
    # Then the filed one holds one rewrite in memory, and reads back all 300 runs
    assert filed.conversation.log.held == 1
    assert sum(isinstance(e, ExitEntry) for e in filed.conversation.log.entries) == 300
    # and the other holds the newest 50 entries before its last rewrite
    assert unfiled.conversation.log.held == len(unfiled.conversation.log.entries) == 51
