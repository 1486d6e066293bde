"""Small things users trip on: an unknown decisions id, branch names cut at a word, the JSON
summary, and a summary that says how to continue and where the log is. Through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from robotlab.cli.robot_to import decisions, robot_to
from robotlab.testing import requests_seen, serve_script
from robotlab.to.record.status import LiveState
from robotlab.to.runner.state import slugify
from tests.to.conftest import DONE, git, submit, write_and_submit

LONG = "Fix the failing parser tests and then refactor the tokenizer"


def test_decisions_for_an_unknown_run_exits_1_and_names_the_newest(repo: Path) -> None:
    with serve_script(write_and_submit("a.txt", "x\n")) as url:
        ran = CliRunner().invoke(robot_to, ["work", "--model", "openai/scripted", "--api-base", url,
                                            "--max-iterations", "1", "--local-guards"])
    assert ran.exit_code == 0, ran.output
    run_id = next((repo / ".robot_lab_to" / "runs").iterdir()).name

    result = CliRunner().invoke(decisions, ["nope"])

    assert result.exit_code == 1
    assert f"No run nope under .robot_lab_to/runs; the newest is {run_id}." in result.output
    assert "--resume nope" not in result.output


def test_branch_names_are_cut_at_a_word_boundary(repo: Path) -> None:
    with serve_script(write_and_submit("a.txt", "x\n")) as url:
        result = CliRunner().invoke(robot_to, [LONG, "--model", "openai/scripted", "--api-base",
                                               url, "--max-iterations", "1", "--local-guards"])

    assert result.exit_code == 0, result.output
    (branch,) = [b for b in git(repo, "branch", "--format=%(refname:short)").split()
                 if b.startswith("robot-to/")]
    assert branch.startswith("robot-to/fix-the-failing-parser-tests-and-then-")
    assert slugify(LONG) == "fix-the-failing-parser-tests-and-then"
    assert slugify("x" * 50) == "x" * 40


def test_json_prints_the_summary_as_one_object(repo: Path) -> None:
    with serve_script(write_and_submit("a.txt", "x\n")) as url:
        result = CliRunner().invoke(robot_to, ["work", "--model", "openai/scripted", "--api-base",
                                               url, "--max-iterations", "1", "--local-guards",
                                               "--json"])

    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "stopped" and summary["reason"] == "max iterations reached (1)"
    assert (summary["iterations"], summary["commits"], summary["exit_code"]) == (1, 1, 0)
    assert summary["log"] == f".robot_lab_to/runs/{summary['run_id']}/run.log"
    assert summary["resume"] == f"robot-to --resume {summary['run_id']}"
    assert "Next steps:" not in result.stdout


def test_the_summary_says_how_to_continue_and_where_the_log_is(repo: Path) -> None:
    with serve_script([submit(False, "stuck"), DONE]) as url:
        result = CliRunner().invoke(robot_to, ["work", "--model", "openai/scripted", "--api-base",
                                               url, "--max-iterations", "1"])

    assert result.exit_code == 0, result.output
    run_id = next((repo / ".robot_lab_to" / "runs").iterdir()).name
    assert f"Log:        .robot_lab_to/runs/{run_id}/run.log" in result.stdout
    assert f"robot-to --resume {run_id}      (to continue)" in result.stdout


def test_quiet_prints_only_the_summary(repo: Path) -> None:
    with serve_script(write_and_submit("a.txt", "x\n")) as url:
        result = CliRunner().invoke(robot_to, ["work", "--model", "openai/scripted", "--api-base",
                                               url, "--max-iterations", "1", "--local-guards",
                                               "--quiet"])

    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert "Reason: max iterations reached (1)" in result.stdout


def test_the_live_line_shows_n_of_N_activity_tokens_and_dollars() -> None:
    state = LiveState(iteration=2, max_iterations=15, phase="robot", activity="edit parser.py",
                      tokens=12_345, cost=0.0123)
    assert state.line(68) == ("iteration 2/15 · robot · edit parser.py · 12,345 tokens · $0.0123 · "
                              "1m 08s")
    assert LiveState(iteration=1,
                     cost=None).line(0) == "iteration 1 · starting · 0 tokens · unknown · 0m 00s"


def test_every_model_call_is_bounded_by_max_output_tokens(repo: Path) -> None:
    for args, expected in (([], 8192), (["--max-output-tokens", "300"], 300)):
        with serve_script(write_and_submit("a.txt", "x\n")) as url:
            result = CliRunner().invoke(robot_to, ["work", "--model", "openai/scripted",
                                                   "--api-base", url, "--max-iterations", "1",
                                                   "--local-guards", *args])
            seen = requests_seen(url)
        assert result.exit_code == 0, result.output
        assert [body["max_tokens"] for body in seen] == [expected] * 3
        git(repo, "checkout", "-q", "main")
