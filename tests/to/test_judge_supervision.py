"""The prose judge runs in a supervised child: the iteration timeout and signals end it."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil
import pytest

from robotlab.errors import RemoteError
from robotlab.process_groups import Supervisor
from robotlab.testing import requests_seen, serve_script
from robotlab.to.child.judge import SupervisedJudge
from robotlab.to.child.robot_factory import RobotModel, judge, warm_up
from robotlab.to.evals.prose import JudgeReply
from robotlab.to.process.forked import Watch
from tests.to.conftest import (
    DONE,
    Runner,
    call,
    git,
    names,
    robot_to_process,
    script_server_process,
    submit,
)
from tests.waiting import wait_until

SLOW_VERDICT = {"content": '{"verdict": "better", "reason": "late"}', "delay": 60}


def _guide(repo: Path) -> None:
    (repo / "guide.md").write_text("draft\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "guide")


def _edit_and_submit() -> list[dict]:
    return [call("read", path="guide.md"),
            call("edit", path="guide.md", old_text="draft", new_text="better"),
            submit(True, "improve the guide"), DONE]


@pytest.fixture(autouse=True, scope="module")
def _warm() -> None:
    """The orchestrator imports the model library before it forks; so do these tests."""
    warm_up()


def _live_children() -> set[int]:
    me = psutil.Process()
    return {p.pid for p in me.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}


@pytest.fixture
def no_new_children():
    """Assert the test leaves no process behind (ignoring what earlier tests left running,
    such as a fork server that lives as long as the test process)."""
    before = _live_children()
    yield
    assert _live_children() - before == set()


def test_a_judge_call_returns_its_reply_and_tokens_from_the_child() -> None:
    supervisor = Supervisor()
    turns = [{"content": '{"verdict": "same", "reason": "r"}',
              "usage": {"prompt_tokens": 40, "completion_tokens": 3}}]
    with serve_script(turns) as url:
        ask = SupervisedJudge(judge(RobotModel(model="openai/scripted", api_base=url)), supervisor,
                              Watch())
        reply = ask("system", "compare")
    assert reply == JudgeReply('{"verdict": "same", "reason": "r"}', 40, 3)


def test_a_judge_past_the_deadline_is_killed_and_named(no_new_children) -> None:
    watch = Watch(deadline=time.monotonic() + 1.5)
    with serve_script([SLOW_VERDICT]) as url:
        ask = SupervisedJudge(judge(RobotModel(model="openai/scripted", api_base=url)),
                              Supervisor(), watch)
        started = time.monotonic()
        with pytest.raises(RemoteError) as raised:
            ask("system", "compare")
        assert len(requests_seen(url)) == 1
    assert raised.value.type_name == "IterationTimeout"
    assert time.monotonic() - started < 10


def test_a_stopped_watch_ends_the_judge_as_interrupted(no_new_children) -> None:
    watch = Watch()
    watch.stop.set()
    with serve_script([SLOW_VERDICT]) as url:
        ask = SupervisedJudge(judge(RobotModel(model="openai/scripted", api_base=url)),
                              Supervisor(), watch)
        with pytest.raises(RemoteError) as raised:
            ask("system", "compare")
    assert raised.value.type_name == "Interrupted"


def test_the_iteration_timeout_kills_a_slow_judge_and_rolls_back(
        runner: Runner, repo: Path) -> None:
    _guide(repo)
    report = runner.run([*_edit_and_submit(), SLOW_VERDICT], eval="prose", local_guards=True,
                        iteration_timeout=3, max_retries=0)

    assert report.exit_code == 1 and "iteration-timeout" in (report.reason or "")
    assert (repo / "guide.md").read_text() == "draft\n"
    assert runner.subjects() == ["guide", "initial"]
    notes = runner.notes(report)
    assert "[ERROR]" in notes and "IterationTimeout" in notes
    events = names(runner.events(report))
    # the robot finished; the judge was cut off
    assert "agent:run:end" in events and "eval" not in events
    assert report.run is not None and report.run.commits == 0


def test_sigint_while_judging_rolls_back_and_exits_130(repo: Path, tmp_path: Path) -> None:
    _guide(repo)
    with script_server_process(tmp_path, [*_edit_and_submit(), SLOW_VERDICT]) as url:
        proc = robot_to_process(repo, url, "--local-guards", "--eval", "prose")
        wait_until(lambda: len(requests_seen(url)) == 5, timeout=60, message="the judge was asked")
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 15, "the signal did not wait for the judge"
    assert proc.returncode == 130, err
    assert "Reason: interrupted by SIGINT" in out
    assert (repo / "guide.md").read_text() == "draft\n"
    assert git(repo, "log", "--format=%s").splitlines() == ["guide", "initial"]
    assert "[INTERRUPTED]" in next((repo / ".robot_lab_to" / "runs").glob("*/notes.md")).read_text()
