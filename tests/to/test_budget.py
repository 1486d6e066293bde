"""--max-tokens holds inside a robot run: the meter refuses the model call past the budget."""

from __future__ import annotations

from pathlib import Path

from robotlab.testing import requests_seen
from tests.to.conftest import DONE, Runner, call, names, write_and_submit

# Every scripted turn costs 10 + 5 tokens.
LONG_RUN = [call("write", path="a.txt", content="a\n"),
            *[call("read", path=f"f{i}.txt") for i in range(8)], DONE]


def test_a_long_run_is_stopped_mid_run_by_the_token_budget(runner: Runner, repo: Path) -> None:
    with runner.serving(LONG_RUN) as url:
        report = runner.run(max_tokens=50, local_guards=True)
        sent = len(requests_seen(url))

    assert sent == 4, "the 5th model call would have passed the budget"
    assert report.exit_code == 0 and report.reason == "max tokens reached (50)"
    assert report.run is not None and report.run.total_tokens == 60
    assert report.run.consecutive_failures == 0 and report.run.commits == 0
    assert not (repo / "a.txt").exists()
    events = names(runner.events(report))
    assert "budget:stop" in events and "iteration:budget_stop" in events
    assert "agent:run:error" not in events and "iteration:failure" not in events
    assert "[BUDGET]" in runner.notes(report)


def test_a_run_whose_last_call_crosses_the_budget_is_a_budget_stop(
        runner: Runner, repo: Path) -> None:
    turns = [call("write", path="a.txt", content="a\n"), DONE, *write_and_submit("b.txt", "b\n")]
    with runner.serving(turns) as url:
        report = runner.run(max_tokens=20, local_guards=True)
        assert len(requests_seen(url)) == 2

    assert report.reason == "max tokens reached (20)" and report.exit_code == 0
    assert report.run is not None and report.run.total_tokens == 30
    assert not (repo / "a.txt").exists()
    assert "iteration:budget_stop" in names(runner.events(report))


def test_a_result_submitted_before_the_budget_ran_out_is_still_committed(runner: Runner) -> None:
    with runner.serving([*write_and_submit("a.txt", "x\n"),
                         *write_and_submit("b.txt", "y\n")]) as url:
        report = runner.run(max_tokens=20, local_guards=True)
        assert len(requests_seen(url)) == 2, "the closing model call was refused"

    assert report.reason == "max tokens reached (20)"
    assert report.run is not None and report.run.commits == 1 and report.run.total_tokens == 30
    events = names(runner.events(report))
    assert "budget:stop" in events and "commit:success" in events and "agent:nudge" not in events
