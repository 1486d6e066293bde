"""Runs gated by verify, measure, target, plateau and the grader lock."""

from __future__ import annotations

from pathlib import Path

from tests.to.conftest import DONE, Runner, call, names, submit, write_and_submit

CHECK = "test -f ok.txt && echo verify-ran"


def test_a_verify_failure_is_repaired_in_place(runner: Runner, repo: Path) -> None:
    turns = [
        *write_and_submit("draft.txt", "x\n", "first try"),
        call("write", path="ok.txt", content="fixed\n"), submit(True, "fixed it"), DONE,
    ]
    report = runner.run(turns, max_iterations=1, local_guards=True, verify_command=CHECK)

    events = runner.events(report)
    assert names(events).count("eval") == 2 and names(events).count("eval:repair") == 1
    assert [e["gate"] for e in events if e["event"] == "eval"] == [False, True]
    assert runner.subjects()[0] == "robot-to 1: fixed it"
    assert (repo / "ok.txt").exists() and (repo / "draft.txt").exists()


def test_three_verify_failures_roll_back_with_the_output_in_the_notes(
        runner: Runner, repo: Path) -> None:
    turns = [*write_and_submit("a.txt", "x\n"), submit(True, "again"), DONE, submit(True, "again"),
             DONE]
    report = runner.run(turns, max_iterations=1, local_guards=True,
                        verify_command="echo boom-output; exit 1")

    assert not (repo / "a.txt").exists()
    assert runner.subjects() == ["initial"]
    notes = runner.notes(report)
    assert "### Iteration 1 [VERIFY FAILED]" in notes
    assert "```\nboom-output\n```" in notes
    assert names(runner.events(report)).count("eval:repair") == 2
    assert report.run is not None and report.run.consecutive_failures == 1


def test_repair_prompt_carries_the_command_and_output(runner: Runner) -> None:
    from robotlab.testing import requests_seen

    turns = [*write_and_submit("a.txt", "x\n"), submit(True, "again"), DONE]
    with runner.serving(turns) as url:
        runner.run(max_iterations=1, local_guards=True, verify_command="echo why-it-failed; exit 1",
                   max_verify_repairs=1)
        bodies = requests_seen(url)
    users = [m["content"] or "" for m in bodies[-1]["messages"] if m["role"] == "user"]
    repair = [text for text in users if "verification" in text]
    assert repair and "echo why-it-failed; exit 1" in repair[0] and "why-it-failed" in repair[0]


def test_a_measured_run_stops_on_its_target(runner: Runner, repo: Path) -> None:
    measure = "cat score.txt 2>/dev/null || echo 10"
    turns = [*write_and_submit("score.txt", "50\n"), *write_and_submit("score.txt.new", "x")]
    (repo / "README.md").write_text("hello\n")
    report = runner.run(turns, max_iterations=5, local_guards=True, write_guard=False,
                        eval_measure=measure, eval_target=40)

    assert report.exit_code == 0
    assert report.reason == "target met: verify=true measure=50.0"
    assert "robot-to complete" in report.summary
    events = runner.events(report)
    assert [e["value"] for e in events if e["event"] == "eval:baseline"] == [10.0]
    assert report.run is not None and report.run.last_score_value == 50.0


def test_a_change_that_does_not_beat_the_base_is_rolled_back(runner: Runner, repo: Path) -> None:
    turns = write_and_submit("a.txt", "x\n") + write_and_submit("b.txt", "y\n")
    report = runner.run(turns, max_iterations=2, local_guards=True, eval_measure="echo 50",
                        max_consecutive_failures=1)

    assert runner.subjects() == ["initial"]
    assert report.reason in ("plateau: 2 iterations without improvement",
                             "max iterations reached (2)")
    assert runner.notes(report).count("[NO IMPROVEMENT]") == 2
    assert report.run is not None and report.run.consecutive_failures == 0


def test_no_require_improvement_commits_gate_passing_changes(runner: Runner) -> None:
    turns = write_and_submit("a.txt", "x\n") + write_and_submit("b.txt", "y\n")
    runner.run(turns, max_iterations=2, local_guards=True, eval_measure="echo 50",
               require_improvement=False)

    assert len(runner.subjects()) == 3


def test_plateau_stops_the_run(runner: Runner) -> None:
    turns = [submit(False, "meh"), DONE] * 2
    report = runner.run(turns, stop_on_plateau=2, max_consecutive_failures=10)

    assert report.exit_code == 0
    assert report.reason == "plateau: 2 iterations without improvement"


def test_a_measure_without_a_number_fails_the_gate(runner: Runner, repo: Path) -> None:
    report = runner.run(write_and_submit("a.txt", "x\n"), max_iterations=1, local_guards=True,
                        eval_measure="echo no number here", max_verify_repairs=0)

    assert "[VERIFY FAILED]" in runner.notes(report) and "printed no number" in runner.notes(report)
    assert not (repo / "a.txt").exists()


def test_a_locked_test_file_cannot_be_edited(runner: Runner, repo: Path) -> None:
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert False\n")
    from tests.to.conftest import git

    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "add test")
    turns = [
        call("read", path="tests/test_x.py"),
        call("edit", path="tests/test_x.py", old_text="assert False", new_text="assert True"),
        call("bash", command="sed -i s/False/True/ tests/test_x.py"),
        call("bash", command="cat tests/test_x.py"),
        submit(False, "the test is locked"), DONE,
    ]
    with runner.serving(turns) as url:
        runner.run(max_iterations=1, local_guards=True, protect_paths=["tests/*.py"])
        from robotlab.testing import requests_seen

        results = [m["content"] for m in requests_seen(url)[-1]["messages"] if m["role"] == "tool"]
    assert results[1].startswith("Refused -- tests/test_x.py is a locked grader artifact")
    assert "Refused" in results[2]
    assert "assert False" in results[3]
    assert "assert False" in (repo / "tests" / "test_x.py").read_text()


def test_a_locked_file_changed_through_a_trick_is_rolled_back(runner: Runner, repo: Path) -> None:
    (repo / "check.sh").write_text("exit 1\n")
    from tests.to.conftest import git

    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "add check")
    trick = "open('check' + '.sh', 'w').write('exit 0\\n')"
    turns = [
        call("write", path="fix.py", content=trick),
        call("bash", command="python3 fix.py"),
        submit(True, "made the check pass"), DONE,
    ]
    report = runner.run(turns, max_iterations=1, local_guards=True, verify_command="sh check.sh",
                        protect_paths=["check.sh"])

    assert (repo / "check.sh").read_text() == "exit 1\n"
    assert not (repo / "fix.py").exists()
    assert runner.subjects()[0] == "add check"
    assert "[GRADER LOCK]" in runner.notes(report) and "check.sh" in runner.notes(report)
    assert "iteration:grader_lock" in names(runner.events(report))
    assert "eval" not in names(runner.events(report))
