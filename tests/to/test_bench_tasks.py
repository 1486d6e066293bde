"""The real-model task suite (bench/tasks/): each task's verify command fails on the task as
given and passes once its reference patch is applied, in a scratch copy. No model runs here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench.real_table import SECTION, Result, append_section, render
from bench.real_tasks import Task, apply_solution, changed_graders, load_tasks, materialize, verify

TASKS = load_tasks()


def _env() -> dict[str, str]:
    """This interpreter's folder first on PATH, so a verify command's ``python`` has pytest; the
    project's pytest plugins left unloaded (the tasks need none, and loading them takes seconds)."""
    return {**os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def test_the_suite_has_the_six_kinds_of_task() -> None:
    assert {task.name for task in TASKS} >= {"off_by_one", "add_function", "rename", "doctest",
                                             "script_output", "config_value"}


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.name)
def test_verify_fails_before_the_fix_and_passes_after(task: Task, tmp_path: Path) -> None:
    # Given the task's files in a fresh repository
    repo = materialize(task, tmp_path / "repo")
    # Then its verify command fails as given
    before = verify(task, repo, _env())
    assert not before.passed, before.output
    # When the reference patch is applied, it passes
    apply_solution(task, repo)
    after = verify(task, repo, _env())
    assert after.passed, after.output
    # And the reference fix leaves the task's tests as they are
    assert changed_graders(task, repo) == []


def test_a_tree_whose_tests_were_changed_or_removed_is_caught(tmp_path: Path) -> None:
    (task,) = load_tasks(["off_by_one"])
    repo = materialize(task, tmp_path / "repo")
    (repo / "test_slicing.py").write_text("def test_nothing():\n    pass\n")
    assert changed_graders(task, repo) == ["test_slicing.py"]
    (repo / "test_slicing.py").unlink()
    assert changed_graders(task, repo) == ["test_slicing.py"]


def test_the_agent_never_sees_the_solution(tmp_path: Path) -> None:
    repo = materialize(TASKS[0], tmp_path / "repo")
    assert not (repo / "solution.patch").exists() and not (repo / "task.yml").exists()


def test_an_unknown_task_name_lists_the_real_ones() -> None:
    with pytest.raises(ValueError, match="off_by_one"):
        load_tasks(["nope"])


def test_every_run_is_appended_to_its_section_and_the_next_section_stays(tmp_path: Path) -> None:
    # Given a benchmarks page with a section after the one the bench writes
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "benchmarks.md"
    page.write_text("# Benchmarks\n\n## Before\n\nx\n")
    rows = [Result("t", "robot-to", True, 1, 3, 100, 10, 5.0, "target met"),
            Result("t", "mini-swe-agent", False, 2, 2, 50, 5, 4.0, "LimitsExceeded")]
    table = render(rows, ["robot-to", "mini-swe-agent"])
    assert "| **total** | **robot-to** | **1/1** | 1 | 3 | 110 (110 per solved task) |" in table
    # When two runs are written, with a later section added between them
    append_section(tmp_path, "bench/robot_to_real.py --first", table, "abc1234", 1.0, 2.0)
    page.write_text(page.read_text() + "\n## After\n\ny\n")
    append_section(tmp_path, "bench/robot_to_real.py --second", table, "abc1234", 1.0, 2.0)
    # Then both runs are in the section, in order, and the later section follows them
    text = page.read_text()
    assert text.count(SECTION) == 1
    assert text.index("--first") < text.index("--second") < text.index("## After\n\ny\n")
