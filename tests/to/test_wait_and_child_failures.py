"""A decision answered while the loop waits for it; a child whose robot cannot be built."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import psutil

from robotlab.testing import requests_seen
from tests.to.conftest import Runner, call, names, script_server_process, write_and_submit
from tests.waiting import wait_until


def _answer_when_waiting(repo: Path, answer: str) -> threading.Thread:
    """In the background: once the loop logs that it waits, resolve the decision file."""

    def waiting_log() -> Path | None:
        for log in (repo / ".robot_lab_to" / "runs").glob("*/run.log"):
            if '"decision:wait:start"' in log.read_text():
                return log
        return None

    def answer_it() -> None:
        log = wait_until(waiting_log, timeout=60, message="the loop waits for the decision")
        (decision,) = (log.parent / "decisions").glob("d-*.md")
        text = decision.read_text().replace("status: pending", "status: resolved")
        decision.write_text(re.sub(r"resolution: null", f"resolution: {answer}", text))

    thread = threading.Thread(target=answer_it, daemon=True)
    thread.start()
    return thread


def test_a_decision_resolved_while_waiting_is_injected_and_the_run_goes_on(runner: Runner) -> None:
    turns = [
        call("request_decision", question="404 or 410?", recommendation="410", blocking=True),
        *write_and_submit("a.txt", "x\n"),
        *write_and_submit("b.txt", "y\n"),
    ]
    answering = _answer_when_waiting(runner.repo, "go with 410")
    with runner.serving(turns) as url:
        report = runner.run(max_iterations=2, local_guards=True, decision_mode="wait",
                            decision_timeout=60)
        second_iteration = requests_seen(url)[4]
    answering.join(timeout=10)

    events = names(runner.events(report))
    assert report.exit_code == 0 and report.reason == "max iterations reached (2)"
    waited = events.index("decision:wait:start")
    assert waited < events.index("decision:wait:resolved") < events.index("iteration:start", waited)
    system = second_iteration["messages"][0]["content"]
    assert "## Answered Decisions" in system and "→ Human decision: go with 410" in system
    assert runner.subjects()[:2] == ["robot-to 2: did it", "robot-to 1: did it"]
    (decision,) = (runner.run_dir(report) / "decisions").glob("d-*.md")
    assert "status: closed" in decision.read_text()


def _left_behind(repo: Path) -> list[int]:
    """Processes other than this test still running in ``repo`` (an orphaned robot child would be
    one)."""
    pids = []
    for proc in psutil.process_iter(["cwd", "status"]):
        if (proc.pid != os.getpid() and proc.info["cwd"] == str(repo)
                and proc.info["status"] != psutil.STATUS_ZOMBIE):
            pids.append(proc.pid)
    return pids


def test_a_child_whose_robot_cannot_be_built_fails_the_iteration_cleanly(
        repo: Path, tmp_path: Path) -> None:
    config_home = tmp_path / "xdg"
    (config_home / "robot_lab").mkdir(parents=True)
    (config_home / "robot_lab" / "robot_lab.yml").write_text("model: [unclosed\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home), "ROBOT_LAB_TO_MAX_RETRIES": "1",
           "ROBOT_LAB_TO_BACKOFF_BASE": "0.01"}
    with script_server_process(tmp_path, []) as url:
        done = subprocess.run(
            [sys.executable, "-c", "from robotlab.cli.robot_to import main; main()", "work",
             "--model", "openai/scripted", "--api-base", url],
            cwd=repo, capture_output=True, text=True, env=env, timeout=120,
        )
        assert requests_seen(url) == []
    assert done.returncode == 1, done.stderr
    assert "Reason: fatal:" in done.stdout and "not valid YAML" in done.stdout
    (run_dir,) = (repo / ".robot_lab_to" / "runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "run.log").read_text().splitlines()]
    errors = [e for e in events if e["event"] == "agent:run:error"]
    assert [e["error"] for e in errors] == ["ConfigError", "ConfigError"]
    notes = (run_dir / "notes.md").read_text()
    # one entry, its retry inside
    assert notes.count("### Iteration 1") == 1 and notes.count("[ERROR]") == 1
    assert "**Retried after 1 error(s):**\n- ConfigError:" in notes
    state = json.loads((run_dir / "run.json").read_text())
    # One iteration failed, after two errors: one failure, rolled back once.
    assert (state["consecutive_failures"], state["consecutive_errors"],
            state["rolled_back"]) == (1, 2, 1)
    assert _left_behind(repo) == []
