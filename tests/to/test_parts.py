"""The parts of robot-to on their own: verifier, tools, guards, notes, decisions, prompt,
summary."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from robotlab.errors import QualityError
from robotlab.to.guards import GraderLock, GuardChain, GuardSettings, QualityMonitor
from robotlab.to.process.command import run_command
from robotlab.to.record import atomic_file, notes, summary
from robotlab.to.record.decisions import DecisionStore, parse
from robotlab.to.runner import prompt
from robotlab.to.runner.backoff import Backoff
from robotlab.to.runner.state import slugify
from robotlab.to.tools import bash, files
from tests.waiting import wait_until


def test_verifier_kills_the_whole_group_on_timeout(tmp_path: Path) -> None:
    marker = f"sleep 1{os.getpid() % 1000}7"
    started = time.monotonic()
    result = run_command(f"sh -c '{marker} & wait'", tmp_path, timeout=0.3)
    assert not result.passed and result.timed_out and "timed out" in result.output
    assert time.monotonic() - started < 3
    wait_until(lambda: marker not in subprocess.run(["ps", "-eo", "cmd"], capture_output=True,
                                                    text=True).stdout,
               timeout=3, message="no surviving sleep")


def test_verifier_clamps_long_output_keeping_head_and_tail(tmp_path: Path) -> None:
    result = run_command("python3 -c \"print('a' * 6000 + 'TAIL')\"", tmp_path, timeout=10)
    assert result.passed and len(result.output) <= 4032
    assert "truncated" in result.output and result.output.endswith("TAIL")


def test_measure_reads_stdout_only(tmp_path: Path) -> None:
    result = run_command("echo 7 >&2; echo 42", tmp_path, timeout=10, merge=False)
    assert result.stdout.strip() == "42"


def test_read_tool_pages_and_reports_empty(tmp_path: Path) -> None:
    target = tmp_path / "ten.txt"
    target.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    text = files.read(str(target), {"path": "ten.txt", "offset": 1, "limit": 2})
    assert text.startswith("line 1\nline 2\n[truncated: showed 2 of 10 lines starting at 1")
    (tmp_path / "empty.txt").write_text("")
    assert files.read(str(tmp_path / "empty.txt"), {"path": "empty.txt"}) == "(empty file)"


def test_edit_tool_refuses_ambiguous_text_and_replaces_literally(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("x x")
    assert files.edit(str(target), {"old_text": "x",
                                    "new_text": "y"}).startswith("Error: old_text is not unique (2")
    assert target.read_text() == "x x"
    target.write_text("a b")
    assert files.edit(str(target),
                      {"path": "f.txt", "old_text": "a", "new_text": r"\1"}) == "Edited f.txt"
    assert target.read_text() == r"\1 b"


def test_bash_tool_reports_status_and_times_out(tmp_path: Path) -> None:
    assert bash.run_bash(str(tmp_path), {"command": "exit 3"}).startswith("[exit 3]")
    started = time.monotonic()
    assert bash.run_bash(str(tmp_path),
                         {"command": "sleep 5", "timeout": 0.5}).startswith("[exit timeout]")
    assert time.monotonic() - started < 3


def _chain(root: Path, lock: list[str] | None = None, **settings: object) -> GuardChain:
    guard = GuardSettings(str(root), local_guards=True,  # type: ignore[arg-type]
                          checkpoint_dir=str(root / ".cp"), **settings)
    return GuardChain(guard, GraderLock(root, lock or []))


def test_write_guard_read_before_edit_and_opt_out(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("old = 1\n")
    chain = _chain(tmp_path)
    write, edit = chain.wrap("write", files.write), chain.wrap("edit", files.edit)
    read = chain.wrap("read", files.read)
    assert "already exists and you have not read it" in write({"path": "f.py", "content": "new"})
    assert (tmp_path / "f.py").read_text() == "old = 1\n"
    assert "must be read before edit" in edit({"path": "f.py", "old_text": "old",
                                               "new_text": "new"})
    read({"path": "f.py"})
    assert edit({"path": "f.py", "old_text": "old", "new_text": "new"}) == "Edited f.py"
    # read: it may be rewritten
    assert write({"path": "f.py", "content": "new = 2\n"}).startswith("Wrote 1 lines")
    assert (tmp_path / ".cp" / notes_flat(tmp_path / "f.py")).read_text() == "old = 1\n"
    free = _chain(tmp_path, write_guard=False).wrap("write", files.write)
    assert free({"path": "f.py", "content": "whole\n"}).startswith("Wrote 1 lines")


def notes_flat(path: Path) -> str:
    from robotlab.to.guards.checkpoint import flatten

    return flatten(str(path))


def test_paths_never_leave_the_repository(tmp_path: Path) -> None:
    read = _chain(tmp_path).wrap("read", files.read)
    assert "outside the repository" in read({"path": "../../etc/passwd"})
    assert "outside the repository" in read({"path": "/etc/passwd"})
    assert "outside the repository" in read({"path": ".git/config"})
    (tmp_path / "foo.md").write_text("root-bare\n")
    assert read({"path": "/foo.md"}) == "root-bare"


def test_grader_lock_allows_reading_and_running_but_not_changing(tmp_path: Path) -> None:
    (tmp_path / "outline.md").write_text("spec\n")
    chain = _chain(tmp_path, ["outline.md", "future.md"])
    write, run = chain.wrap("write", files.write), chain.wrap("bash", lambda args: "ran")
    assert write({"path": "outline.md",
                  "content": "x"}).startswith("Refused -- outline.md is a locked grader")
    assert write({"path": "future.md", "content": "x"}).startswith("Refused -- future.md")
    assert chain.wrap("read", files.read)({"path": str(tmp_path / "outline.md")}) == "spec"
    assert run({"command": "cat outline.md"}) == "ran"
    assert run({"command": "ls -la"}) == "ran"
    assert run({"command": "echo x > outline.md"}).startswith("Refused")
    assert run({"command": "rm outline.md"}).startswith("Refused")
    assert not GraderLock(tmp_path, [])


def test_grader_lock_hash_check_sees_changes_and_creation(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("a\n")
    lock = GraderLock(tmp_path, ["t.py", "tests/*.py"])
    before = lock.snapshot()
    assert lock.changed(before) == []
    (tmp_path / "t.py").write_text("b\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_new.py").write_text("x\n")
    assert lock.changed(before) == ["t.py", "tests/test_new.py"]


def test_quality_monitor_trips_on_the_fourth_identical_call() -> None:
    monitor = QualityMonitor()
    for name in "AABBB":
        monitor.record(name, {"path": "a"})
    with pytest.raises(QualityError, match="repeated_tool_call"):
        for _ in range(4):
            monitor.record("read", {"path": "a"})


def test_atomic_append_keeps_whole_content_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    atomic_file.write(target, "old\n")
    atomic_file.append(target, "new\n")
    assert target.read_text() == "old\nnew\n"
    assert not list(tmp_path.glob("*.tmp"))


def test_notes_markers_and_bounded_view(tmp_path: Path) -> None:
    book = notes.Notes(tmp_path / "notes.md")
    book.write_header("r1", "obj")
    book.failure(1, "no", ["x"])
    book.error(2, "RuntimeError", "boom")
    text = book.read()
    assert text.index("### Iteration 1 [FAIL]") < text.index("- x") < text.index(
        "### Iteration 2 [ERROR]")
    assert "RuntimeError: boom" in text
    for i in range(3, 40):
        book.verify_failed(i, "s", "out " * 200)
    view = notes.bounded(book.read())
    assert len(view) < notes.PROMPT_CHAR_LIMIT + 1500 and "Older iterations (digest" in view
    assert "### Iteration 39" in view and len(book.read()) > len(view)


def test_decision_files_round_trip_and_tolerate_bad_yaml(tmp_path: Path) -> None:
    store = DecisionStore(tmp_path)
    decision = store.write({"question": "404 or 410?", "blocking": True, "options": ["404", "410"]},
                           1)
    assert decision.status == "pending" and decision.blocking and store.blocking()
    broken = decision.path.read_text().replace("resolution: null", "resolution: a: b")
    decision.path.write_text(broken)
    reparsed = parse(decision.path)
    assert reparsed is not None and reparsed.status == "pending" and reparsed.blocking
    store.close(reparsed)
    assert parse(decision.path).status == "closed"  # type: ignore[union-attr]


def test_a_decision_whose_front_matter_a_person_broke_can_still_be_answered(
        tmp_path: Path) -> None:
    store = DecisionStore(tmp_path)
    decision = store.write({"question": "404 or 410?", "blocking": True}, 1)
    text = decision.path.read_text()
    decision.path.write_text(text.replace("resolution: null", "resolution: a: b"))
    answered = store.resolve(decision.id, "410: gone for good")
    assert answered is not None and answered.status == "resolved"
    assert answered.resolution == "410: gone for good" and answered.question == "404 or 410?"
    assert "# Decision: 404 or 410?" in decision.path.read_text()
    assert [d.id for d in store.resolved()] == [decision.id] and not store.blocking()


def test_a_decision_file_without_front_matter_is_answered_with_its_text_kept(
        tmp_path: Path) -> None:
    store = DecisionStore(tmp_path)
    (tmp_path / "d-by-hand.md").write_text("# Decision: ship it?\n\nSay yes or no.\n")
    answered = store.resolve("d-by-hand", "yes")
    assert answered is not None and (answered.status, answered.resolution) == ("resolved", "yes")
    kept = "---\n# Decision: ship it?\n\nSay yes or no.\n"
    assert (tmp_path / "d-by-hand.md").read_text().endswith(kept)


def test_a_decision_answered_in_another_encoding_still_counts(tmp_path: Path) -> None:
    store = DecisionStore(tmp_path)
    decision = store.write({"question": "404 or 410?", "blocking": True}, 1)
    saved = decision.path.read_bytes().replace(b"status: pending", b"status: resolved")
    decision.path.write_bytes(saved.replace(b"resolution: null", b"resolution: 410, caf\xe9"))
    [answered] = store.resolved()
    assert answered.resolution == "410, caf\ufffd"
    store.close(answered)
    assert parse(decision.path).status == "closed"  # type: ignore[union-attr]


def test_prompt_sections() -> None:
    base = prompt.PromptInputs(objective="obj", iteration=1, notes_path="n.md", notes="")
    text = prompt.system_prompt(base)
    assert "(no iterations yet)" in text and "## Your Task" in text
    assert "## When to Ask for a Human Decision" in text
    assert "## Verification" not in text and "## Score Feedback" not in text
    assert "Stop Condition" not in text
    scored = prompt.PromptInputs(objective="o", iteration=3, notes_path="n", notes="", scored=True,
                                 last_score_value=84.0, target=90)
    assert "Best score committed so far: 84.0 (target: 90.0)." in prompt.system_prompt(scored)
    assert "Build on it" in prompt.system_prompt(scored)


def test_summary_format_and_slug() -> None:
    facts = summary.SummaryFacts("m", 252, "max iterations reached (8)", "robot-to/x-1", "id",
                                 ".robot_lab_to/runs/id", "362b8d9abc", 8, 6, 2, 0, 1204883, 38902,
                                 312, 47, 14)
    text = summary.render(facts)
    assert ("robot-to stopped — m — 4m 12s\nReason: max iterations reached (8)\n"
            "Branch: robot-to/x-1") in text
    assert "(6 committed, 2 rolled back)" in text and "+312 / -47 across 14 files" in text
    assert "1,204,883 in / 38,902 out" in text and "git diff 362b8d9..HEAD" in text
    assert slugify("Fix the Parser!! now") == "fix-the-parser-now" and slugify("***") == "takeover"


def test_backoff_is_interruptible_and_honours_retry_after() -> None:
    backoff = Backoff(60)
    assert [backoff.delay(n) for n in (1, 2, 3)] == [60, 120, 240]
    assert backoff.delay(1, retry_after=3) == 3
    backoff.interrupt()
    started = time.monotonic()
    assert backoff.sleep_for(1) is False and time.monotonic() - started < 1
