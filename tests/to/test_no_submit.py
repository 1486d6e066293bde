"""A robot that changes files but never calls submit_iteration_result: with a verify command
the gate decides ("no submit; verify passed"); without one, or without a change, it fails."""

from __future__ import annotations

from pathlib import Path

from tests.to.conftest import DONE, Runner, call, names

CHECK = "test -f ok.txt"


def test_an_edit_without_a_submit_commits_when_verify_passes(runner: Runner, repo: Path) -> None:
    # Given a robot that writes the file verify looks for, then stops talking, even when nudged
    turns = [call("write", path="ok.txt", content="fixed\n"), {"content": "I fixed it."}, DONE]
    # When the run is gated by a verify command
    report = runner.run(turns, max_iterations=1, local_guards=True, verify_command=CHECK)
    # Then the gate decides: the change is committed, and the notes and the log say why
    assert runner.subjects()[0] == "robot-to 1: no submit; verify passed"
    assert (repo / "ok.txt").exists()
    events = runner.events(report)
    assert "agent:nudge" in names(events)
    no_submit = [e for e in events if e["event"] == "iteration:no_submit"]
    assert no_submit == [{**no_submit[0], "detail": "no submit; verify passed",
                          "files": ["ok.txt"]}]
    assert "no submit; verify passed" in runner.notes(report)


def test_an_edit_without_a_submit_is_rolled_back_when_verify_fails(
        runner: Runner, repo: Path) -> None:
    turns = [call("write", path="wrong.txt", content="x\n"), {"content": "done?"}, DONE]
    report = runner.run(turns, max_iterations=1, local_guards=True, verify_command=CHECK,
                        max_verify_repairs=0)

    assert runner.subjects() == ["initial"] and not (repo / "wrong.txt").exists()
    assert "iteration:gate_failure" in names(runner.events(report))
    assert "[VERIFY FAILED]" in runner.notes(report)


def test_no_change_and_no_submit_still_fails_without_running_verify(runner: Runner) -> None:
    report = runner.run([{"content": "thinking"}, DONE], max_iterations=1, verify_command="true")

    events = names(runner.events(report))
    assert "iteration:failure" in events and "eval" not in events


def test_without_a_verify_command_an_unsubmitted_edit_fails(runner: Runner, repo: Path) -> None:
    turns = [call("write", path="ok.txt", content="x\n"), {"content": "done"}, DONE]
    report = runner.run(turns, max_iterations=1, local_guards=True)

    assert runner.subjects() == ["initial"] and not (repo / "ok.txt").exists()
    assert "iteration:failure" in names(runner.events(report))
