"""The quality monitor: every detector, on its own and wired into the iteration's robot."""

from __future__ import annotations

import pytest

from robotlab.errors import QualityError
from robotlab.testing import requests_seen
from robotlab.to.guards.quality import QualityMonitor, correction_message
from tests.to.conftest import DONE, Runner, call, names, write_and_submit

KNOWN = ("read", "submit_iteration_result")
EMPTY = {"content": ""}


def _last_user_message(request: dict) -> str:
    return next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")


def test_bad_tool_names_warn_twice_then_raise() -> None:
    monitor = QualityMonitor()
    monitor.tool_called("frobnicate", KNOWN)
    monitor.tool_called("", KNOWN)
    assert monitor.drain() == ["unknown_tool:frobnicate", "empty_tool_name"]
    with pytest.raises(QualityError) as raised:
        monitor.tool_called("zap", KNOWN)
    assert raised.value.reason == "unknown_tool:zap"


def test_a_known_tool_resets_the_bad_name_count() -> None:
    monitor = QualityMonitor()
    for name in ("x", "y", "read", "x", "y", "read"):
        monitor.tool_called(name, KNOWN)
    assert monitor.bad_names == 0 and len(monitor.drain()) == 4


def test_empty_replies_warn_then_raise_unless_submitted() -> None:
    monitor = QualityMonitor()
    monitor.run_ended("", 0, submitted=True)
    monitor.run_ended("  ", 0, submitted=False)
    assert monitor.drain() == ["empty_response"]
    monitor.run_ended("some text", 0, submitted=False)
    monitor.run_ended(None, 0, submitted=False)
    with pytest.raises(QualityError) as raised:
        monitor.run_ended(None, 0, submitted=False)
    assert raised.value.reason == "empty_response"


def test_repeats_are_counted_per_identical_call() -> None:
    monitor = QualityMonitor()
    for args in ({"path": "a"}, {"path": "a"}, {"path": "b"}, {"path": "b"}, {"path": "b"}):
        monitor.record("read", args)
    with pytest.raises(QualityError, match="repeated_tool_call"):
        monitor.record("read", {"path": "b"})


def test_correction_messages() -> None:
    assert correction_message("unknown_tool:zap") == ("Tool 'zap' does not exist. Use only your "
                                                      "registered tools.")
    assert correction_message("empty_response").startswith("Your response was empty.")
    assert "repeated the previous tool call" in correction_message("repeated_tool_call")
    assert correction_message("odd") == "Response quality issue (odd). Please correct and continue."


def test_an_empty_reply_is_corrected_in_the_nudge_and_the_work_commits(runner: Runner) -> None:
    with runner.serving([EMPTY, *write_and_submit("a.txt", "x\n")]) as url:
        report = runner.run(max_iterations=1, local_guards=True)
        nudge = requests_seen(url)[1]
    events = runner.events(report)
    assert report.run is not None and report.run.commits == 1
    assert [e["reason"] for e in events if e["event"] == "quality:warning"] == ["empty_response"]
    assert _last_user_message(nudge).startswith("Your response was empty.")


def test_a_second_empty_reply_ends_the_attempt(runner: Runner) -> None:
    report = runner.run([EMPTY, EMPTY, EMPTY], max_retries=0)

    assert report.exit_code == 1 and "empty_response" in (report.reason or "")
    assert "QualityError: response quality failure: empty_response" in runner.notes(report)
    assert names(runner.events(report)).count("agent:run:start") == 2


def test_a_third_unknown_tool_call_in_a_row_ends_the_attempt(runner: Runner) -> None:
    turns = [call("frobnicate", x=1), call("frobnicate", x=2), call("zap"), DONE]
    with runner.serving(turns) as url:
        report = runner.run(max_retries=0)
        assert len(requests_seen(url)) == 3
    assert "response quality failure: unknown_tool:zap" in runner.notes(report)
    warnings = [e["reason"] for e in runner.events(report) if e["event"] == "quality:warning"]
    assert warnings == ["unknown_tool:frobnicate", "unknown_tool:frobnicate"]


def test_a_tool_call_without_a_name_is_detected(runner: Runner) -> None:
    with runner.serving([call(""), *write_and_submit("a.txt", "x\n")]) as url:
        report = runner.run(max_iterations=1, local_guards=True)
        assert len(requests_seen(url)) == 4
    assert report.run is not None and report.run.commits == 1
    warnings = [e["reason"] for e in runner.events(report) if e["event"] == "quality:warning"]
    assert warnings == ["empty_tool_name"]
