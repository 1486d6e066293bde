"""Failing fast with the fix: the preflight before the branch, permanent errors mid-run, and a
run that commits nothing leaving no branch behind. Through the CLI, in real git repositories."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from robotlab.cli.robot_to import robot_to
from robotlab.testing import requests_seen, serve_script
from tests.to.conftest import DONE, git, submit, write_and_submit


@pytest.fixture
def preflight_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The preflight as a user gets it (the repo fixture turns it off for scripted runs)."""
    monkeypatch.delenv("ROBOT_LAB_TO_PREFLIGHT")


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


def robot_to_cli(*args: str) -> Result:
    return CliRunner().invoke(robot_to, ["Improve the project", "--model", "openai/scripted",
                                         *args])


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_missing_key_exits_2_naming_the_variable_and_makes_no_branch(
    repo: Path, preflight_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {key: value for key, value in __import__("os").environ.items() if key != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-c", "from robotlab.cli.robot_to import main; main()", "work", "--model",
         "gpt-4o-mini"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=120,
    )

    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "robot-to: OPENAI_API_KEY is not set: set it, or pass --api-base URL for a local server")
    assert branches(repo) == ["main"]
    assert not (repo / ".robot_lab_to").exists()


def test_a_refused_key_exits_2_with_the_fix_after_one_call(repo: Path, preflight_on: None) -> None:
    with serve_script([{"error": {"status": 401,
                                  "message": "Incorrect API key provided"}}] * 3) as url:
        result = robot_to_cli("--api-base", url)
        seen = requests_seen(url)

    assert result.exit_code == 2
    assert ("robot-to: preflight: the provider refused the API key "
            "(OPENAI_API_KEY): check it") in result.output
    assert len(seen) == 1 and branches(repo) == ["main"]


def test_an_unknown_model_exits_2(repo: Path, preflight_on: None) -> None:
    with serve_script([{"error": {"status": 404,
                                  "message": "The model `nope` does not exist"}}]) as url:
        result = robot_to_cli("--api-base", url)

    assert result.exit_code == 2
    assert "model 'openai/scripted' was not found at" in result.output
    assert "check --model" in result.output
    assert branches(repo) == ["main"]


def test_an_unreachable_server_exits_2(repo: Path, preflight_on: None) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = robot_to_cli("--api-base", url)

    assert result.exit_code == 2
    assert (f"robot-to: preflight: cannot reach {url}: start the server or "
            "check --api-base") in result.output
    assert branches(repo) == ["main"]


def test_a_model_that_answers_passes_the_preflight(repo: Path, preflight_on: None) -> None:
    with serve_script([{"content": "OK"}, *write_and_submit("a.txt", "x\n")]) as url:
        result = robot_to_cli("--api-base", url, "--max-iterations", "1", "--local-guards")
        seen = requests_seen(url)

    assert result.exit_code == 0, result.output
    assert seen[0]["max_tokens"] == 16 and "tools" not in seen[0]
    assert git(repo, "log", "--format=%s").splitlines()[0] == "robot-to 1: did it"


def test_a_permanent_error_mid_run_ends_it_at_once(repo: Path) -> None:
    with serve_script([{"error": {"status": 404, "message": "no such model"}}] * 4) as url:
        result = robot_to_cli("--api-base", url)
        seen = requests_seen(url)

    assert result.exit_code == 1
    assert "Reason: permanent error: model 'openai/scripted' was not found" in result.output
    assert len(seen) == 1 and "retrying" not in result.output


def test_a_transient_error_is_retried_and_the_wait_is_shown(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOT_LAB_TO_BACKOFF_BASE", "0.01")
    # The provider client's own retries (three by default) take the first 503s.
    overloaded = [{"error": {"status": 503, "message": "overloaded"}}] * 4
    with serve_script([*overloaded, *write_and_submit("a.txt", "x\n")]) as url:
        result = robot_to_cli("--api-base", url, "--max-iterations", "1", "--local-guards")

    assert result.exit_code == 0, result.output
    assert "iteration 1: server error — retry 1/2 in 0.01s (Ctrl-C stops the run)" in result.output


def test_a_run_that_commits_nothing_returns_to_the_start_and_deletes_its_branch(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    with serve_script([submit(False, "could not"), DONE]) as url:
        result = robot_to_cli("--api-base", url, "--max-iterations", "1")

    assert result.exit_code == 0, result.output
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"
    assert sorted(branches(repo)) == ["feature", "main"]
    assert "(deleted: nothing was committed; back on feature)" in result.output
    (run_dir,) = (repo / ".robot_lab_to" / "runs").iterdir()
    assert (run_dir / "notes.md").is_file() and (run_dir / "run.log").is_file()


def test_resume_recreates_a_deleted_empty_branch(repo: Path) -> None:
    with serve_script([submit(False, "could not"), DONE, *write_and_submit("a.txt", "x\n")]) as url:
        first = robot_to_cli("--api-base", url, "--max-iterations", "1", "--local-guards")
        assert first.exit_code == 0 and branches(repo) == ["main"], first.output
        (run_dir,) = (repo / ".robot_lab_to" / "runs").iterdir()
        second = CliRunner().invoke(robot_to, ["--resume", run_dir.name, "--max-iterations", "2"])

    assert second.exit_code == 0, second.output
    assert git(repo, "log", "--format=%s").splitlines() == ["robot-to 2: did it", "initial"]
    assert git(repo, "rev-parse", "--abbrev-ref",
               "HEAD").strip().startswith("robot-to/improve-the-project-")


def test_the_first_lines_say_what_the_start_up_waits_for(repo: Path, preflight_on: None) -> None:
    with serve_script([{"error": {"status": 401, "message": "Incorrect API key provided"}}]) as url:
        result = robot_to_cli("--api-base", url)

    assert result.stderr.splitlines()[:3] == [
        "robot-to: starting…",
        "robot-to: loading the model client…",
        "robot-to: checking openai/scripted (preflight: credentials and one call)…",
    ]
