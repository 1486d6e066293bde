"""robot-to never waits silently or pointlessly: a backoff says what it waits for and how to stop
it, Ctrl-C ends any wait at once, and an error that waiting cannot clear ends the run."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from robotlab.to.record.status import LiveState
from robotlab.to.runner import loop
from tests.to.conftest import (
    DONE,
    Runner,
    git,
    names,
    script_server_process,
    submit,
    write_and_submit,
)
from tests.waiting import wait_until

SERVER_ERROR = {"error": {"status": 503, "message": "upstream restarting"}}


def _closed_port_url() -> str:
    """An api-base where nothing listens (the port was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@contextlib.contextmanager
def _robot_to(repo: Path, url: str, stderr: Path, *args: str,
              env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """The real ``robot-to`` in ``repo``, its progress lines written to ``stderr``, with Ctrl-C's
    default action as in a terminal (a test worker may ignore SIGINT, and a child inherits that).
    Killed on the way out if it is still running."""
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-c", "from robotlab.cli.robot_to import main; main()",
             "--model", "openai/scripted", "--api-base", url, *args, "Improve the project"],
            cwd=repo, stdout=subprocess.PIPE, stderr=err, text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1", **(env or {})},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            assert process.stdout is not None
            process.stdout.close()


def _interrupt(robot_to: subprocess.Popen[str], stderr: Path) -> str:
    """Ctrl-C, and robot-to's stdout once it has exited; if it has not within 30 s, the test
    fails with where each of its threads waits (SIGABRT makes faulthandler print that)."""
    robot_to.send_signal(signal.SIGINT)
    try:
        return robot_to.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        robot_to.send_signal(signal.SIGABRT)
        robot_to.communicate(timeout=30)
        pytest.fail("robot-to did not exit within 30 s of Ctrl-C:\n" + stderr.read_text()[-4000:])


def test_the_live_line_counts_a_wait_down_and_says_how_to_stop_it() -> None:
    state = LiveState(iteration=3, max_iterations=10, phase="retry 1/2", wait_until=100.0)

    assert state.line(65, now=57.6).startswith(
        "iteration 3/10 · retry 1/2 in 43s (Ctrl-C stops the run) · ")
    assert "in 0s" in state.line(65, now=120.0)
    assert "Ctrl-C" not in LiveState(phase="robot").line(0)


def test_the_live_line_says_whom_a_decision_waits_for_how_long_and_until_when() -> None:
    until = time.mktime((2026, 12, 6, 14, 5, 31, 0, 0, -1))  # local time, as the line shows it
    state = LiveState(iteration=1, max_iterations=2, phase="awaiting decision",
                      decision_since=until - 900, decision_until=until, decision_from="alice")

    assert state.line(130, wall=until - 837).startswith(
        "iteration 1/2 · awaiting alice's decision for 1m 03s, until 14:05:31 (13m 57s left) · ")
    assert "(0m 00s left)" in state.line(130, wall=until + 5)
    files = LiveState(phase="awaiting decision", decision_since=until)
    assert "awaiting a decision for 0m 10s, no deadline · " in files.line(0, wall=until + 10)


def test_a_closed_api_base_without_preflight_ends_the_run_with_the_fix(runner: Runner) -> None:
    report = runner.run(None, api_base=_closed_port_url(), backoff_base=600, max_retries=5)

    assert report.exit_code == 1
    assert (report.reason or "").startswith("permanent error: cannot reach http://127.0.0.1:")
    assert "start the server or check --api-base" in (report.reason or "")
    assert "backoff:start" not in names(runner.events(report))


def test_a_used_up_script_is_not_waited_on(runner: Runner) -> None:
    report = runner.run([], backoff_base=600, max_retries=5)

    assert report.exit_code == 1 and "script exhausted" in (report.reason or "")
    assert "backoff:start" not in names(runner.events(report))


def test_off_a_terminal_a_long_wait_repeats_that_it_is_waiting(
        runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop, "WAIT_REMINDER_SECONDS", 0.2)
    # The provider client tries a 503 four times before robot-to sees the error.
    turns = [SERVER_ERROR] * 4 + write_and_submit("a.txt", "x\n")

    report = runner.run(turns, backoff_base=1.5, max_iterations=1, local_guards=True)

    progress = runner.err.getvalue()
    assert report.exit_code == 0 and runner.subjects()[0] == "robot-to 1: did it"
    assert "server error — retry 1/2 in 1.5s (Ctrl-C stops the run)" in progress
    assert "still waiting — retry 1/2 in " in progress


def test_ctrl_c_ends_a_backoff_at_once(repo: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr"
    with script_server_process(tmp_path, [SERVER_ERROR] * 4) as url:
        backoff = {"ROBOT_LAB_TO_BACKOFF_BASE": "3600", "ROBOT_LAB_TO_MAX_RETRIES": "3"}
        with _robot_to(repo, url, stderr, env=backoff) as robot_to:
            wait_until(lambda: "retry 1/3 in 3600s (Ctrl-C stops the run)" in stderr.read_text(),
                       timeout=60, message="robot-to starts its backoff")
            out = _interrupt(robot_to, stderr)

    assert robot_to.returncode == 130
    assert "Reason: interrupted by SIGINT" in out
    assert "ChildExited" not in out + stderr.read_text()


def test_ctrl_c_during_the_preflight_leaves_no_branch(repo: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr"
    with script_server_process(tmp_path, [{"content": "slow", "delay": 60}]) as url:
        with _robot_to(repo, url, stderr, env={"ROBOT_LAB_TO_PREFLIGHT": "true"}) as robot_to:
            wait_until(lambda: "preflight" in stderr.read_text(), timeout=60,
                       message="the preflight call is on its way")
            _interrupt(robot_to, stderr)

    assert robot_to.returncode == 130
    assert stderr.read_text().splitlines()[-1] == (
        "robot-to: interrupted before the first iteration began: nothing was committed")
    assert git(repo, "branch", "--format=%(refname:short)").split() == [
        git(repo, "branch", "--show-current").strip()]
    assert "Traceback" not in stderr.read_text()


def test_should_fully_stop_without_stop_when_goes_on_and_says_so(runner: Runner) -> None:
    turns = [*write_and_submit("a.txt", "x\n", should_fully_stop=True),
             submit(False, "nothing left"), DONE]
    report = runner.run(turns, max_iterations=2, local_guards=True)

    assert report.reason == "max iterations reached (2)"
    assert ("the robot asked to stop; the run goes on (only --stop-when lets the "
            "robot end it)") in runner.err.getvalue()
    assert "stop:ignored" in names(runner.events(report))
