"""Scored runs that cannot improve end early: a target met at the base, and a measure that
cannot rise ending on the plateau, with or without --require-improvement. Through the CLI."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from robotlab.cli.robot_to import robot_to
from robotlab.testing import requests_seen, serve_script
from tests.to.conftest import git, write_and_submit


def run_cli(url: str, *args: str) -> Result:
    return CliRunner().invoke(robot_to, ["Raise the score", "--model", "openai/scripted",
                                         "--api-base", url, "--local-guards", *args])


def three_writes() -> list[dict[str, object]]:
    return [*write_and_submit("a.txt", "1\n"), *write_and_submit("b.txt", "2\n"),
            *write_and_submit("c.txt", "3\n")]


def test_a_base_that_already_meets_the_target_stops_at_once(repo: Path) -> None:
    with serve_script(three_writes()) as url:
        result = run_cli(url, "--measure", "echo 95", "--target", "90", "--max-iterations", "5")
        seen = requests_seen(url)

    assert result.exit_code == 0, result.output
    assert "Reason: target met: the score 95 already meets the target 90" in result.output
    assert "robot-to complete" in result.output
    assert seen == [] and git(repo, "log", "--format=%s").splitlines() == ["initial"]


def test_a_measure_that_cannot_rise_ends_on_the_plateau(repo: Path) -> None:
    with serve_script(three_writes()) as url:
        result = run_cli(url, "--measure", "echo 50", "--stop-on-plateau", "2", "--max-iterations",
                         "3")

    assert result.exit_code == 0, result.output
    assert "Reason: plateau: 2 iterations without improvement" in result.output
    assert git(repo, "log", "--format=%s").splitlines() == ["initial"]


def test_commits_without_improvement_still_count_toward_the_plateau(repo: Path) -> None:
    with serve_script(three_writes()) as url:
        result = run_cli(url, "--measure", "echo 50", "--stop-on-plateau", "2", "--max-iterations",
                         "3", "--no-require-improvement")

    assert result.exit_code == 0, result.output
    assert "Reason: plateau: 2 iterations without improvement" in result.output
    assert len(git(repo, "log", "--format=%s").splitlines()) == 3


def test_require_improvement_compares_with_the_best_committed_score(repo: Path) -> None:
    # The score falls to 40 on a commit made with --no-require-improvement; the resumed run
    # (with improvement required) must beat the best, 50, not the parent's 40.
    measure = "test -f b.txt && echo 40 || echo 50"
    with serve_script(three_writes()) as url:
        first = run_cli(url, "--measure", measure, "--max-iterations", "2",
                        "--no-require-improvement")
        assert first.exit_code == 0, first.output
        run_id = next((repo / ".robot_lab_to" / "runs").iterdir()).name
        second = CliRunner().invoke(robot_to, ["--resume", run_id, "--max-iterations", "3",
                                               "--require-improvement", "--measure", "echo 45"])

    assert second.exit_code == 0, second.output
    assert "[NO IMPROVEMENT]" in next(
        (repo / ".robot_lab_to" / "runs").glob("*/notes.md")).read_text()
    assert len(git(repo, "log", "--format=%s").splitlines()) == 3
