"""robot-to on the bus: a real broker, robot-to as a process with --broker, asked for its
status through `robotlab send` and told a decision's answer over the bus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from robotlab import bus
from robotlab.testing import requests_seen
from tests.process.conftest import (  # noqa: F401 (fixtures)
    broker,
    endpoint,
    live,
    processes,
    start_broker,
    start_robotd,
    state_directory,
)
from tests.process.person import Person
from tests.to.conftest import (
    DONE,
    call,
    git,
    robot_to_process,
    script_server_process,
    submit,
    write_and_submit,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def run_id_of(repo: Path) -> str | None:
    runs = repo / ".robot_lab_to" / "runs"
    found = [p.name for p in runs.iterdir()] if runs.is_dir() else []
    return found[0] if found else None


def test_a_run_on_the_bus_answers_status_and_a_decision(
        repo: Path, tmp_path: Path, broker: str) -> None:  # noqa: F811
    turns = [call("request_decision", question="404 or 410?", recommendation="410", blocking=True),
             submit(False, "waiting for the answer"), DONE, *write_and_submit("a.txt", "x\n")]
    with script_server_process(tmp_path, turns) as url:
        proc = robot_to_process(repo, url, "--broker", broker, "--local-guards", "--max-iterations",
                                "2", "--decision-poll", "0.2")
        try:
            run_id = wait_until(lambda: run_id_of(repo), timeout=60, message="the run directory")
            wait_until(lambda: live(broker, run_id), timeout=30, message="the run in robotlab ps")
            with bus.connect(broker, name="tester", timeout=5) as client:
                state = wait_until(lambda: _awaiting(client, run_id), timeout=60,
                                   message="the run awaiting")
                (pending,) = state["pending_decisions"]
                shown = wait_until(lambda: _in_ps(broker, run_id), timeout=30,
                                   message="the run's phase in robotlab ps")
                cli = subprocess.run([sys.executable, "-m", "robotlab.cli", "send", "--to", run_id,
                                      "--broker", broker, "--wait",
                                      "status"], capture_output=True, text=True, timeout=60)
                answer = client.request(run_id, f"decide {pending['id']} use 410",
                                        timeout=10).content
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    assert json.loads(cli.stdout)["phase"] == "awaiting decision", cli.stderr
    assert (shown["iteration"],
            shown["stats"]["status"]) == ("1/2", "iteration 1/2 · awaiting decision")
    assert answer == {"id": pending["id"], "status": "resolved", "resolution": "use 410"}
    assert proc.returncode == 0, err
    assert "Reason: max iterations reached (2)" in out
    assert git(repo, "log", "--format=%s").splitlines()[0] == "robot-to 2: did it"
    decision = next(
        (repo / ".robot_lab_to" / "runs" / run_id / "decisions").glob("d-*.md")).read_text()
    assert "status: closed" in decision and "resolution: use 410" in decision
    assert live(broker, run_id) == []


def _in_ps(url: str, run_id: str) -> dict | None:
    """The run's `robotlab ps --json` row once it shows the run awaiting its decision."""
    done = subprocess.run([sys.executable, "-m", "robotlab.cli", "ps", "--broker", url, "--json"],
                          capture_output=True, text=True, timeout=60)
    rows = [row for row in json.loads(done.stdout or "[]") if row["name"] == run_id]
    return rows[0] if rows and rows[0].get("phase") == "awaiting decision" else None


def _awaiting(client: bus.BusClient, run_id: str) -> dict | None:
    state = client.request(run_id, "status", timeout=10).content
    return state if state.get("phase") == "awaiting decision" else None


def test_an_unreachable_broker_ends_the_run_with_the_fix(repo: Path, tmp_path: Path) -> None:
    with script_server_process(tmp_path, [submit(False, "no"), DONE]) as url:
        proc = robot_to_process(repo, url, "--broker", f"ipc://{tmp_path}/nobody")
        out, err = proc.communicate(timeout=120)

    assert proc.returncode == 1, err
    assert "cannot join the bus at ipc://" in out and "start the broker, or drop --broker" in out


def test_a_served_robot_is_the_prose_judge(
        repo: Path, tmp_path: Path, broker: str, start_robotd) -> None:  # noqa: F811
    start_robotd("critic", "handlers:judge_prefers_b")
    (repo / "guide.md").write_text("draft\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "guide")
    turns = [call("read", path="guide.md"),
             call("edit", path="guide.md", old_text="draft", new_text="better"),
             submit(True, "improve the guide"), DONE]
    with script_server_process(tmp_path, turns) as url:
        proc = robot_to_process(repo, url, "--broker", broker, "--judge-robot", "critic", "--eval",
                                "prose", "--local-guards", "--max-iterations", "1")
        out, err = proc.communicate(timeout=120)

    assert proc.returncode == 0, err
    assert git(repo, "log", "--format=%s").splitlines()[0] == "robot-to 1: improve the guide"
    log = next((repo / ".robot_lab_to" / "runs").glob("*/run.log")).read_text()
    (judged,) = [json.loads(line) for line in log.splitlines()
                 if json.loads(line)["event"] == "eval"]
    assert judged["improved"] is True and "B reads better" in judged["judge_reply"]


def test_judge_robot_needs_the_bus(repo: Path, tmp_path: Path) -> None:
    with script_server_process(tmp_path, [submit(False, "no"), DONE]) as url:
        proc = robot_to_process(repo, url, "--judge-robot", "critic", "--eval", "prose")
        out, err = proc.communicate(timeout=120)

    assert proc.returncode == 2
    assert ("robot-to: --judge-robot needs the bus: pass --broker URL (or set "
            "ROBOT_LAB_BROKER)") in err


def test_the_robot_asks_its_crew_through_the_run(
        repo: Path, tmp_path: Path, broker: str, start_robotd) -> None:  # noqa: F811
    start_robotd("reviewer", "handlers:echo")
    turns = [call("ask_crew", robot="reviewer", question="is a.txt a good name?"),
             *write_and_submit("a.txt", "x\n")]
    with script_server_process(tmp_path, turns) as url:
        proc = robot_to_process(repo, url, "--broker", broker, "--crew", "reviewer",
                                "--local-guards", "--max-iterations", "1")
        out, err = proc.communicate(timeout=120)
        seen = requests_seen(url)

    assert proc.returncode == 0, err
    log = next((repo / ".robot_lab_to" / "runs").glob("*/run.log")).read_text()
    (answer,) = [e for e in map(json.loads, log.splitlines()) if e["event"] == "crew:answer"]
    assert answer["robot"] == "reviewer" and answer["answer"].startswith(
        "is a.txt a good name? (from ")
    tool_replies = [m["content"] for m in seen[1]["messages"] if m.get("role") == "tool"]
    assert tool_replies == [answer["answer"]]
    assert "ask_crew" in [t["function"]["name"] for t in seen[0]["tools"]]


def _traced(tmp_path: Path, who: str) -> dict[str, str]:
    return {"OTEL_TRACES_EXPORTER": "jsonl",
            "ROBOT_LAB_TRACES_FILE": str(tmp_path / f"{who}.jsonl"),
            "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_SERVICE_NAME": who}


def _spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_crew_question_travels_in_the_runs_trace(
        repo: Path, tmp_path: Path, broker: str, start_robotd) -> None:  # noqa: F811
    start_robotd("reviewer", "handlers:echo", env=_traced(tmp_path, "reviewer"))
    turns = [call("ask_crew", robot="reviewer", question="is a.txt a good name?"),
             *write_and_submit("a.txt", "x\n")]
    with script_server_process(tmp_path, turns) as url:
        proc = robot_to_process(repo, url, "--broker", broker, "--crew", "reviewer",
                                "--local-guards", "--max-iterations", "1",
                                env=_traced(tmp_path, "robot-to"))
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    reviewer = tmp_path / "reviewer.jsonl"
    wait_until(lambda: any(s["name"] == "process reviewer" for s in _spans(reviewer)), timeout=30,
               message="the reviewer's process span")
    spans = _spans(tmp_path / "robot-to.jsonl") + _spans(reviewer)
    by_name = {s["name"]: s for s in spans}
    run = next(s for name, s in by_name.items() if name.startswith("robot-to "))
    iteration, send = by_name["iteration 1"], by_name["send reviewer"]
    process = by_name["process reviewer"]
    # the question is sent inside the run's iteration, and answered in the same trace
    assert {s["context"]["trace_id"] for s in (run, iteration, send,
                                               process)} == {run["context"]["trace_id"]}
    assert iteration["parent_id"] == run["context"]["span_id"]
    by_id = {s["context"]["span_id"]: s for s in spans}
    ancestors, at = [], send
    while at.get("parent_id") in by_id:
        at = by_id[at["parent_id"]]
        ancestors.append(at["name"])
    assert "iteration 1" in ancestors, ancestors


def test_a_blocking_decision_waits_for_her_answer_on_the_bus(
        repo: Path, tmp_path: Path, broker: str) -> None:  # noqa: F811
    # Given alice at her terminal, and a run whose robot raises a blocking decision
    alice = Person(broker, "alice", tmp_path / "alice.log")
    turns = [call("request_decision", question="404 or 410?", recommendation="410", blocking=True),
             submit(False, "waiting for the answer"), DONE, *write_and_submit("a.txt", "x\n")]
    try:
        with script_server_process(tmp_path, turns) as url:
            proc = robot_to_process(repo, url, "--broker", broker, "--ask", "alice",
                                    "--local-guards", "--max-iterations", "2", "--decision-poll",
                                    "0.2", "--decision-timeout", "120")
            try:
                # When the question is on her screen and she types her answer
                shown = alice.sees("404 or 410?", timeout=90)
                with bus.connect(broker, name="tester", timeout=5) as client:
                    state = wait_until(lambda: _awaiting(client, str(run_id_of(repo))), timeout=60,
                                       message="the run awaiting")
                alice.types("use 410")
                out, err = proc.communicate(timeout=120)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    finally:
        alice.stop()
    # Then the run went on with her answer as the decision's resolution
    assert shown.startswith("[1] ") and "BLOCKING" in shown, shown
    assert "the robot leans to: 410" in shown, shown
    (pending,) = state["pending_decisions"]
    assert pending["person"] == "alice" and isinstance(pending["until"], float)
    # and the run said whom it waited for, and until when, as its live line does
    assert state["decision_from"] == "alice" and state["decision_since"] <= pending["until"]
    assert "awaiting human decision on 1 item(s) from alice on the bus, until " in err, err
    assert proc.returncode == 0, err
    assert "Reason: max iterations reached (2)" in out
    run_dir = next((repo / ".robot_lab_to" / "runs").iterdir())
    decision = next((run_dir / "decisions").glob("d-*.md")).read_text()
    assert "resolution: use 410" in decision
    events = [json.loads(line) for line in (run_dir / "run.log").read_text().splitlines()]
    (answered,) = [e for e in events if e["event"] == "decision:answered"]
    assert (answered["via"], answered["resolution"]) == ("alice", "use 410")
    assert git(repo, "log", "--format=%s").splitlines()[0] == "robot-to 2: did it"


def test_ask_needs_the_bus(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROBOT_LAB_BROKER", raising=False)
    with script_server_process(tmp_path, [submit(False, "no"), DONE]) as url:
        proc = robot_to_process(repo, url, "--ask", "alice")
        out, err = proc.communicate(timeout=120)

    assert proc.returncode == 2
    assert "robot-to: --ask needs the bus: pass --broker URL (or set ROBOT_LAB_BROKER)" in err
