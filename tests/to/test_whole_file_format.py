"""robot-to's whole-file edit format (``edit_format="whole"``): no tools, one standalone question
per attempt, the reply's files written for the robot, the verify command the judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from robotlab.testing import requests_seen
from tests.to.conftest import Runner, git, names

CHECK = "grep -q fixed value.txt"


@pytest.fixture
def project(repo: Path) -> Path:
    (repo / "value.txt").write_text("broken\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "value")
    return repo


def reply(content: str, name: str = "value.txt") -> dict[str, str]:
    return {"content": f"Here is the file.\n\n{name}\n```\n{content}\n```\n"}


def test_attempts_build_on_each_other_until_verify_passes(runner: Runner, project: Path) -> None:
    # Given a model whose first whole-file reply is wrong and whose second is right
    turns = [reply("still broken"), reply("fixed")]
    with runner.serving(turns) as url:
        report = runner.run(None, "Make value.txt say fixed", max_iterations=1, edit_format="whole",
                            verify_command=CHECK)
        requests = requests_seen(url)
    # Then the second attempt's change is committed, judged by verify alone
    assert runner.subjects()[0] == "robot-to 1: whole-file reply; verify passed"
    assert (project / "value.txt").read_text() == "fixed\n"
    assert names(runner.events(report)).count("whole_file:reply") == 2
    # And every request stands alone, offers no tools, and ends with the task
    assert [len(request["messages"]) for request in requests] == [2, 2]
    assert not any(request.get("tools") for request in requests)
    first, second = (request["messages"][-1]["content"] for request in requests)
    assert "value.txt\n```\nbroken\n```" in first and f"`{CHECK}` fails" in first
    assert "value.txt\n```\nstill broken\n```" in second  # the tree the first attempt left
    assert first.index("Task: Make value.txt say fixed") > first.index("fails")


def test_a_reply_that_writes_no_file_is_asked_again(runner: Runner, project: Path) -> None:
    turns = [{"content": "You should change value.txt to say fixed."}, reply("fixed")]

    runner.run(turns, "Make value.txt say fixed", max_iterations=1, edit_format="whole",
               verify_command=CHECK)

    assert runner.subjects()[0] == "robot-to 1: whole-file reply; verify passed"
    assert "the reply wrote no file (1/3)" in runner.err.getvalue()


def test_a_locked_grader_file_is_refused_and_nothing_passes(runner: Runner, project: Path) -> None:
    (project / "check.sh").write_text("grep -q fixed value.txt\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "grader")
    turns = [reply("true", "check.sh")] * 3

    with runner.serving(turns) as url:
        report = runner.run(None, "Make the check pass", max_iterations=1, edit_format="whole",
                            verify_command="sh check.sh", protect_paths=["check.sh"])
        first, second, _ = (request["messages"][-1]["content"] for request in requests_seen(url))

    # The model was shown the locked file first, marked as not to be written
    locked = first.index("check.sh (locked: it checks your change; do not write it)\n```")
    assert locked < first.index("value.txt\n```")

    # And the next attempt is told its reply was refused
    assert "Your last reply tried to write a locked file, which is refused." in second

    replies = [e for e in runner.events(report) if e["event"] == "whole_file:reply"]
    assert len(replies) == 3 and all(e["written"] == [] and e["refused"] for e in replies)
    assert (project / "check.sh").read_text() == "grep -q fixed value.txt\n"
    assert runner.subjects()[0] == "grader"


def test_the_whole_file_format_needs_a_verify_command(runner: Runner, project: Path) -> None:
    report = runner.run([], "Anything", max_iterations=1, edit_format="whole")

    assert report.exit_code == 2 and report.run is None
    assert "--edit-format whole needs --verify-command" in runner.err.getvalue()


def test_a_reply_that_changed_nothing_is_named_and_the_next_attempt_samples_hotter(
        runner: Runner, project: Path) -> None:
    # Given a model that first repeats the file unchanged, then writes a wrong change, then the fix
    turns = [reply("broken"), reply("still broken"), reply("fixed")]
    with runner.serving(turns) as url:
        report = runner.run(None, "Make value.txt say fixed", max_iterations=1, edit_format="whole",
                            verify_command=CHECK)
        requests = requests_seen(url)
    assert runner.subjects()[0] == "robot-to 1: whole-file reply; verify passed"
    # Then the attempt after the echo is told what its reply did, and samples hotter;
    # the one after a real (if wrong) change is back at the robot's temperature, and is told nothing
    first, second, third = (request["messages"][-1]["content"] for request in requests)
    assert "Your last reply" not in first and "Your last reply" not in third
    assert "Your last reply repeated value.txt unchanged, which fixes nothing." in second
    temperatures = [request.get("temperature") for request in requests]
    assert temperatures[1] > temperatures[0] == temperatures[2]
    unchanged = [e["unchanged"] for e in runner.events(report) if e["event"] == "whole_file:reply"]
    assert unchanged == [["value.txt"], [], []]


def test_a_reply_pasting_the_verify_output_under_a_files_name_writes_nothing(
        runner: Runner, project: Path) -> None:
    # Given a verify command that says why it fails, and a model that pastes that under value.txt's
    # name
    check = ("grep -q fixed value.txt || { echo 'value.txt says broken where the check wants "
             "fixed'; exit 1; }")
    turns = [reply("value.txt says broken where the check wants fixed"), reply("fixed")]

    report = runner.run(turns, "Make value.txt say fixed", max_iterations=1, edit_format="whole",
                        verify_command=check)

    # Then the pasted output is no file: value.txt keeps its text until the real fix
    replies = [e for e in runner.events(report) if e["event"] == "whole_file:reply"]
    assert [e["written"] for e in replies] == [[], ["value.txt"]]
    assert runner.subjects()[0] == "robot-to 1: whole-file reply; verify passed"
