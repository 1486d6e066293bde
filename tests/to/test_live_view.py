"""What a run shows and records while it works: tool calls and refusals, verify runs with their
output tail, repairs with their reason, the files a commit changed (from git), the model's
last reply. Through the CLI in real git repositories, stderr not a terminal (plain lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from robotlab.cli.robot_to import robot_to
from robotlab.testing import serve_script
from tests.to.conftest import DONE, call, git, submit, write_and_submit


def run_cli(turns: list[dict[str, Any]], *args: str) -> Result:
    with serve_script(turns) as url:
        return CliRunner().invoke(robot_to, ["Do work", "--model", "openai/scripted", "--api-base",
                                             url, "--local-guards", "--max-iterations", "1", *args])


def events(repo: Path, name: str) -> list[dict[str, Any]]:
    lines = next((repo / ".robot_lab_to" / "runs").glob("*/run.log")).read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


def notes(repo: Path) -> str:
    return next((repo / ".robot_lab_to" / "runs").glob("*/notes.md")).read_text()


def test_every_tool_call_and_a_refusal_are_logged_and_shown(repo: Path) -> None:
    # local.txt exists but is ignored, so the prompt does not show it: writing over it unread is
    # refused
    (repo / "local.txt").write_text("mine\n")
    with (repo / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("local.txt\n")
    turns = [call("write", path="local.txt", content="overwrite\n"),
             *write_and_submit("new.txt", "x\n")]
    result = run_cli(turns)

    assert result.exit_code == 0, result.output
    calls = [(e["tool"], e["target"]) for e in events(repo, "tool:call")]
    assert calls == [("write", "local.txt"), ("write", "new.txt"),
                     ("submit_iteration_result", "did it")]
    outcomes = [(e["tool"], e["outcome"]) for e in events(repo, "tool:result")]
    assert outcomes == [("write", "refused"), ("write", "ok"), ("submit_iteration_result", "ok")]
    assert events(repo, "tool:result")[0]["reason"].startswith(
        "Refused -- local.txt already exists")
    assert ("robot-to: iteration 1: refused write local.txt: Refused -- local.txt "
            "already exists") in result.stderr
    assert "\x1b[" not in result.stderr


def test_a_failed_verify_shows_its_tail_and_the_repair_its_reason(repo: Path) -> None:
    check = "test -f ok.txt || { echo line-one; echo the-real-failure; exit 3; }"
    turns = [*write_and_submit("draft.txt", "x\n"), call("write", path="ok.txt", content="ok\n"),
             submit(True), DONE]
    result = run_cli(turns, "--verify", check)

    assert result.exit_code == 0, result.output
    runs = events(repo, "verify:run")
    assert [(r["kind"], r["exit_code"],
             r["passed"]) for r in runs] == [("verify", 3, False), ("verify", 0, True)]
    assert runs[0]["command"] == check and runs[0]["output_tail"].endswith("the-real-failure")
    assert runs[0]["seconds"] >= 0
    assert f"iteration 1: verify `{check}` exited 3 after" in result.stderr
    assert "the-real-failure" in result.stderr
    assert "verification failed (verify=false) — repairing (1/2)" in result.stderr
    assert events(repo, "eval:repair")[0]["reason"] == "verify=false"


def test_notes_list_the_files_git_committed_not_only_the_claim(repo: Path) -> None:
    result = run_cli(write_and_submit("src/util.py", "x = 1\n", "tidy up"))

    assert result.exit_code == 0, result.output
    entry = notes(repo)
    assert "**Changes:**\n- (none)" in entry
    assert "**Files changed (git):**\n- src/util.py" in entry
    assert git(repo, "show", "--format=", "--name-only", "HEAD").split() == ["src/util.py"]


def test_the_model_s_last_reply_is_in_run_log_clipped(repo: Path) -> None:
    long_reply = "I could not finish. " * 200
    result = run_cli([submit(False, "stuck"), {"content": long_reply}])

    assert result.exit_code == 0, result.output
    (end,) = events(repo, "agent:run:end")
    assert end["last_reply"].startswith("I could not finish.")
    assert end["last_reply"].endswith(f"… [{len(long_reply) - 2000} more characters]")
