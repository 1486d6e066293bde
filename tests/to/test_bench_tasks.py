"""The real-model task suite (bench/tasks/): each task's verify command fails on the task as
given and passes once its reference patch is applied, in a scratch copy. No model runs here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench.real_tasks import Task, apply_solution, load_tasks, materialize, verify

TASKS = load_tasks()


def _env() -> dict[str, str]:
    """This interpreter's folder first on PATH, so a verify command's ``python`` has pytest; the
    project's pytest plugins left unloaded (the tasks need none, and loading them takes seconds)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
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


def test_the_agent_never_sees_the_solution(tmp_path: Path) -> None:
    repo = materialize(TASKS[0], tmp_path / "repo")
    assert not (repo / "solution.patch").exists() and not (repo / "task.yml").exists()


def test_an_unknown_task_name_lists_the_real_ones() -> None:
    with pytest.raises(ValueError, match="off_by_one"):
        load_tasks(["nope"])
