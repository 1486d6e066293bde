"""The robot-to command: flags, stdin, the config cascade, resume, decisions, Ctrl-C."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from robotlab.cli.robot_to import decisions, main, robot_to
from robotlab.testing import serve_script
from robotlab.to import config
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


def _state(repo: Path) -> dict:
    (path,) = (repo / ".robot_lab_to" / "runs").glob("*/run.json")
    return json.loads(path.read_text())


def test_version_and_help() -> None:
    result = CliRunner().invoke(robot_to, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("robot-to ")
    help_text = CliRunner().invoke(robot_to, ["-h"]).output
    for flag in ("--verify-command", "--verify", "--measure", "--protect-path", "--resume",
                 "--api-base", "--iteration-timeout", "--decision-mode", "--no-stream",
                 "--local-guards"):
        assert flag in help_text


def test_an_empty_objective_is_a_usage_error(repo: Path) -> None:
    result = CliRunner().invoke(robot_to, [], input="\n")
    assert result.exit_code == 2
    assert "objective required" in result.output


def test_a_bad_flag_value_is_a_usage_error() -> None:
    result = CliRunner().invoke(robot_to, ["x", "--max-iterations", "many"])
    assert result.exit_code == 2


def test_flags_reach_the_run_and_are_stored(repo: Path) -> None:
    with serve_script(write_and_submit("a.txt", "x\n")) as url:
        result = CliRunner().invoke(robot_to, [
            "do work", "--model", "openai/scripted", "--api-base", url, "--max-iterations", "1",
            "--protect-path", "a.md", "--protect-path", "b.md", "--no-require-improvement",
            "--target", "90", "--local-guards", "--verify", "true", "--commit-format",
            "conventional",
        ])
    assert result.exit_code == 0, result.output
    settings = _state(repo)["settings"]
    assert settings["protect_paths"] == ["a.md", "b.md"]
    assert settings["require_improvement"] is False and settings["eval_target"] == 90.0
    assert settings["verify_command"] == "true" and settings["local_guards"] is True
    assert "chore: did it" in git(repo, "log", "--format=%s")


def test_the_objective_can_come_from_stdin(repo: Path) -> None:
    with serve_script([submit(False, "no"), DONE]) as url:
        result = CliRunner().invoke(robot_to, ["--model", "openai/scripted", "--api-base", url,
                                               "--max-iterations", "1"],
                                    input="Objective from stdin\n")
    assert result.exit_code == 0
    assert _state(repo)["objective"] == "Objective from stdin"


def test_the_config_cascade(repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "robot_lab").mkdir(parents=True)
    (xdg / "robot_lab" / "to.yml").write_text(
        "model: from-file\nmax_consecutive_failures: 5\nmax_retries: 9\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setenv("ROBOT_LAB_TO_MAX_CONSECUTIVE_FAILURES", "4")
    monkeypatch.setenv("ROBOT_LAB_TO_MAX_ITERATIONS", "5")

    settings = config.load()
    assert (settings.model, settings.max_retries) == ("from-file", 9)
    assert settings.max_consecutive_failures == 4
    assert settings.max_iterations is None
    assert config.load({"max_consecutive_failures": 7,
                        "nonexistent_key": 1}).max_consecutive_failures == 7
    assert config.load().max_verify_repairs == 2


def test_openai_api_base_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_BASE", "http://localhost:11434/v1")
    assert config.load().api_base == "http://localhost:11434/v1"
    assert config.load({"api_base": "http://other/v1"}).api_base == "http://other/v1"


def test_a_bad_setting_in_the_environment_exits_2(repo: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOT_LAB_TO_DECISION_MODE", "sometimes")
    result = CliRunner().invoke(robot_to, ["x"])
    assert result.exit_code == 2 and "decision_mode" in result.output


def test_resume_needs_no_flags(repo: Path) -> None:
    turns = [call("request_decision", question="go?", blocking=True),
             *write_and_submit("a.txt", "1\n"), *write_and_submit("b.txt", "2\n")]
    with serve_script(turns) as url:
        first = CliRunner().invoke(robot_to, ["work", "--model", "openai/scripted", "--api-base",
                                              url, "--max-iterations", "2", "--local-guards",
                                              "--decision-mode", "exit"])
        assert first.exit_code == 0 and "awaiting human decision" in first.output
        run_id = _state(repo)["run_id"]
        listing = CliRunner().invoke(decisions, [])
        assert "Pending (awaiting your answer):" in listing.output
        assert "go? [BLOCKING]" in listing.output
        (decision,) = (repo / ".robot_lab_to" / "runs" / run_id / "decisions").glob("d-*.md")
        decision.write_text(decision.read_text().replace("status: pending", "status: resolved"))
        second = CliRunner().invoke(robot_to, ["--resume", run_id])
    assert second.exit_code == 0, second.output
    assert "Reason: max iterations reached (2)" in second.output
    assert _state(repo)["commits"] == 2


def test_decisions_without_runs_exits_1(repo: Path) -> None:
    result = CliRunner().invoke(decisions, [])
    assert result.exit_code == 1 and "No runs found" in result.output


def test_main_routes_the_decisions_word(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["decisions"])
    assert exited.value.code == 1 and "No runs found" in capsys.readouterr().err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_iteration_rolls_back_prints_the_summary_and_exits_130(
    repo: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    turns = [call("write", path="half.txt", content="half done\n"),
             {"content": "slow", "delay": 60}]
    with script_server_process(tmp_path, turns) as url:
        proc = robot_to_process(repo, url, "--local-guards")
        wait_until(lambda: (repo / "half.txt").exists(), timeout=60,
                   message="the robot wrote half.txt")
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert f"Reason: interrupted by {signum.name}" in out and "Branch: robot-to/work-" in out
    assert not (repo / "half.txt").exists()
    assert git(repo, "log", "--format=%s").splitlines() == ["initial"]
    assert "[INTERRUPTED]" in next((repo / ".robot_lab_to" / "runs").glob("*/notes.md")).read_text()
