"""The prompt for a small model: a small project shown whole, no notes path before there are
notes, and how to write a tool call; files shown in the prompt count as read."""

from __future__ import annotations

from pathlib import Path

from robotlab.to.runner import prompt
from tests.to.conftest import DONE, Runner, call, git, submit


def test_a_small_project_is_shown_whole(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("X = 1\n")
    texts = prompt.small_project(tmp_path, ["a.py"])
    inputs = prompt.PromptInputs(objective="o", iteration=1, notes_path="runs/1/notes.md", notes="",
                                 files=["a.py"], file_texts=texts, local_tools=True)
    text = prompt.system_prompt(inputs)
    assert "### a.py\n\n```\nX = 1\n```" in text
    assert "runs/1/notes.md" not in text and "(no iterations yet)" in text
    assert '{"name": "edit", "arguments": {"path": "PATH"' in text


def test_a_larger_project_is_listed_only(tmp_path: Path) -> None:
    names = [f"m{i}.py" for i in range(prompt.SMALL_PROJECT_FILES + 1)]
    for name in names:
        (tmp_path / name).write_text("X = 1\n")
    assert prompt.small_project(tmp_path, names) == {}
    (tmp_path / "big.txt").write_text("x" * (prompt.SMALL_PROJECT_CHARS + 1))
    assert prompt.small_project(tmp_path, ["big.txt"]) == {}
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\x00")
    assert prompt.small_project(tmp_path, ["blob.bin"]) == {}


def test_without_local_tools_there_is_no_tool_section() -> None:
    inputs = prompt.PromptInputs(objective="o", iteration=1, notes_path="n.md", notes="")
    assert "## How to Call Tools" not in prompt.system_prompt(inputs)


def test_notes_keep_their_path_once_there_are_notes() -> None:
    inputs = prompt.PromptInputs(objective="o", iteration=2, notes_path="runs/1/notes.md",
                                 notes="### Iteration 1")
    assert "File path: runs/1/notes.md" in prompt.system_prompt(inputs)


def test_a_file_shown_in_the_prompt_may_be_edited_without_a_read(
        runner: Runner, repo: Path) -> None:
    turns = [call("edit", path="README.md", old_text="hello", new_text="hello there"),
             submit(True, "greet"), DONE]
    runner.run(turns, max_iterations=1, local_guards=True)

    assert (repo / "README.md").read_text() == "hello there\n"
    assert git(repo, "log", "-1", "--format=%s").strip() == "robot-to 1: greet"


def test_a_whole_file_in_a_fence_rewrites_a_shown_file_and_the_gate_decides(
        runner: Runner, repo: Path) -> None:
    # Given a model that answers with the whole new README under its name, and never submits
    turns = [{"content": "Here is the updated `README.md`:\n\n```\nhello there\n```"}, DONE, DONE]
    runner.run(turns, max_iterations=1, local_guards=True, verify_command="grep -q there README.md")
    # Then the block was written (the prompt showed README.md whole) and the verify gate committed
    # it
    assert (repo / "README.md").read_text() == "hello there\n"
    assert git(repo, "log", "-1", "--format=%s").strip() == "robot-to 1: no submit; verify passed"
