"""Whole runs through the Python API in real git repositories, with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

from tests.to.conftest import DONE, Runner, call, git, names, submit, write_and_submit


def test_a_committed_success_creates_the_branch_commit_notes_and_events(
        runner: Runner, repo: Path) -> None:
    report = runner.run(write_and_submit("a.txt", "hello\n", "add a.txt"), "Add a file",
                        max_iterations=1, local_guards=True)

    assert report.exit_code == 0
    assert report.reason == "max iterations reached (1)"
    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    assert branch.startswith("robot-to/add-a-file-")
    assert runner.subjects() == ["robot-to 1: add a.txt", "initial"]
    assert "### Iteration 1\n" in runner.notes(report)
    assert names(runner.events(report)) == [
        "orchestrator:start", "iteration:start", "agent:run:start",
        "tool:call", "tool:result", "tool:call", "tool:result",  # write a.txt, submit
        "agent:run:end", "eval", "commit:success", "iteration:end", "orchestrator:abort",
        "orchestrator:end",
    ]
    assert "Reason: max iterations reached (1)" in report.summary
    assert f"Branch: {branch}" in report.summary
    assert "(1 committed, 0 rolled back)" in report.summary
    assert "Tokens:       30 in / 15 out\n" in report.summary  # the server's counts, not estimates


def test_every_event_has_its_fields(runner: Runner) -> None:
    report = runner.run(write_and_submit("a.txt", "x\n"), max_iterations=1, local_guards=True)

    events = runner.events(report)
    assert all({"event", "ts"} <= set(e) for e in events)
    by_name = {e["event"]: e for e in events}
    assert {"run_id", "objective", "branch", "model"} <= set(by_name["orchestrator:start"])
    evaluation = by_name["eval"]
    assert (evaluation["gate"], evaluation["improved"],
            evaluation["met_target"]) == (True, True, False)
    assert evaluation["detail"] == "no eval configured" and "value" not in evaluation
    assert by_name["commit:success"]["message"] == "robot-to 1: did it"
    end = by_name["orchestrator:end"]
    assert {"iterations", "commits", "input_tokens", "output_tokens", "abort_reason",
            "elapsed"} <= set(end)
    assert end["input_tokens"] > 0 and end["commits"] == 1
    assert events[0]["ts"][10] == "T" and events[0]["ts"][-6] in "+-"


def test_run_json_keeps_state_and_settings(runner: Runner) -> None:
    report = runner.run(write_and_submit("a.txt", "x\n"), max_iterations=1, local_guards=True,
                        verify_command="true")

    import json

    state = json.loads((runner.run_dir(report) / "run.json").read_text())
    assert state["iteration"] == 1 and state["commits"] == 1
    assert state["settings"]["verify_command"] == "true"
    assert state["settings"]["max_iterations"] == 1
    assert not list(runner.run_dir(report).glob("*.tmp"))


def test_conventional_commits_use_the_submitted_type_and_scope(runner: Runner) -> None:
    turns = [
        *write_and_submit("a.txt", "1\n", "add greeting", type="feat", scope="greeter"),
        *write_and_submit("b.txt", "2\n", "tidy up"),
    ]
    runner.run(turns, max_iterations=2, local_guards=True, commit_format="conventional")

    assert runner.subjects()[:2] == ["chore: tidy up", "feat(greeter): add greeting"]


def test_a_failure_is_rolled_back_with_a_fail_note(runner: Runner, repo: Path) -> None:
    turns = [call("write", path="junk.txt", content="x"),
             submit(False, "could not", key_learnings=["x"]), DONE]
    report = runner.run(turns, max_iterations=1, local_guards=True)

    assert not (repo / "junk.txt").exists()
    assert runner.subjects() == ["initial"]
    notes = runner.notes(report)
    assert "### Iteration 1 [FAIL]" in notes and "- x" in notes
    assert report.run is not None and report.run.consecutive_failures == 1
    assert "(0 committed, 1 rolled back)" in report.summary


def test_no_submit_is_nudged_once_then_fails(runner: Runner) -> None:
    report = runner.run([{"content": "thinking"}, {"content": "still thinking"}], max_iterations=1)

    events = names(runner.events(report))
    assert events.count("agent:nudge") == 1 and "iteration:failure" in events
    assert "Robot did not call submit_iteration_result" in runner.notes(report)


def test_consecutive_failures_abort_with_exit_1(runner: Runner) -> None:
    turns = [submit(False, "nope"), DONE] * 2
    report = runner.run(turns, max_consecutive_failures=2)

    assert report.exit_code == 1
    assert report.reason == "2 consecutive failures"
    assert "robot-to stopped" in report.summary


def test_max_iterations_counts_every_iteration(runner: Runner) -> None:
    turns = write_and_submit("a.txt", "1\n") + [submit(False, "nope"),
                                                DONE] + write_and_submit("b.txt", "2\n")
    report = runner.run(turns, max_iterations=3, local_guards=True)

    assert report.reason == "max iterations reached (3)"
    assert report.run is not None and (report.run.iteration, report.run.commits) == (3, 2)


def test_a_dirty_tree_is_refused_naming_the_files(runner: Runner, repo: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")

    report = runner.run([DONE])

    assert report.exit_code == 2
    assert "README.md" in runner.err.getvalue() and "new.txt" in runner.err.getvalue()
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert (repo / "new.txt").read_text() == "new\n"


def test_a_repository_without_commits_is_refused(tmp_path: Path, monkeypatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    report = Runner(empty).run([DONE])

    assert report.exit_code == 2 and "No commits found" in (report.reason or "")


def test_the_run_dir_is_excluded_once_and_survives_rollback(runner: Runner, repo: Path) -> None:
    runner.run([submit(False, "no"), DONE], max_iterations=1)
    runner.run([submit(False, "no"), DONE], max_iterations=1)

    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count(".robot_lab_to") == 1
    assert len(list((repo / ".robot_lab_to" / "runs").iterdir())) == 2


def test_a_commit_a_hook_refuses_is_kept_for_repair_not_rolled_back(
        runner: Runner, repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho refused by the hook\nexit 1\n")
    hook.chmod(0o755)
    report = runner.run(write_and_submit("a.txt", "x\n"), max_iterations=1, local_guards=True)

    assert (repo / "a.txt").exists() and runner.subjects() == ["initial"]
    assert "commit:failed" in names(runner.events(report))
    assert report.run is not None and (report.run.commits, report.run.rolled_back) == (0, 0)
    assert "(0 committed, 0 rolled back)" in report.summary


def test_tokens_a_model_server_did_not_report_are_marked_estimated(runner: Runner) -> None:
    unreported = {"usage": None}  # a local server that sends no usage
    turns = [{**submit(False, "no"), **unreported}, {**DONE, **unreported}]
    report = runner.run(turns, max_iterations=1, stream=False)

    state = json.loads((runner.run_dir(report) / "run.json").read_text())
    assert state["tokens_estimated"] is True
    assert ("Tokens:       ~0 in / ~0 out (estimated: the model server "
            "reported no usage") in report.summary
    [end] = [event for event in runner.events(report) if event["event"] == "orchestrator:end"]
    assert end["tokens_estimated"] is True
