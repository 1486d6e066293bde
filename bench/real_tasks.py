"""The real-model task suite under ``bench/tasks/``: load a task, make a scratch repo of it, verify.

Each task is a folder: ``task.yml`` (``objective``, ``verify``), ``repo/`` (the files the agent
starts from) and ``solution.patch`` (a known-correct fix, ``git apply``-able in the repo). The
agent sees only ``repo/``; the patch proves the verify command fails before a fix and passes
after one (tests/to/test_bench_tasks.py). ``bench/robot_to_real.py`` runs the agents on them.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import yaml

TASKS = Path(__file__).resolve().parent / "tasks"
# The tests a task's verify command runs: an agent must make them pass, never change them.
GRADER_GLOB = "test_*.py"
# Files a verify run leaves behind, kept out of git so they are never part of an agent's change.
EXCLUDED = ("__pycache__/", ".pytest_cache/", "*.pyc")
VERIFY_TIMEOUT = 60.0


@dataclasses.dataclass(frozen=True)
class Task:
    """One task of the suite."""

    name: str
    objective: str
    verify: str
    folder: Path

    @property
    def solution(self) -> Path:
        """The reference fix, a patch relative to the repo's root."""
        return self.folder / "solution.patch"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the verify command said about a working tree."""

    passed: bool
    output: str


def load_tasks(names: list[str] | None = None) -> list[Task]:
    """The tasks of the suite in name order (only ``names`` when given; an unknown name raises)."""
    tasks = {}
    for spec in sorted(TASKS.glob("*/task.yml")):
        data = yaml.safe_load(spec.read_text())
        tasks[spec.parent.name] = Task(spec.parent.name, " ".join(str(data["objective"]).split()),
                                       str(data["verify"]).strip(), spec.parent)
    if names:
        unknown = sorted(set(names) - set(tasks))
        if unknown:
            raise ValueError(f"no such task: {', '.join(unknown)} (there are: {', '.join(tasks)})")
        return [tasks[name] for name in names]
    return list(tasks.values())


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env=env).stdout


def materialize(task: Task, dest: Path) -> Path:
    """A fresh git repository at ``dest`` holding the task's files in one commit on ``main``."""
    shutil.copytree(task.folder / "repo", dest)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "config", "user.email", "bench@example.com")
    _git(dest, "config", "user.name", "bench")
    (dest / ".git" / "info").mkdir(exist_ok=True)
    (dest / ".git" / "info" / "exclude").write_text("\n".join(EXCLUDED) + "\n")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", f"task {task.name}")
    return dest


def apply_solution(task: Task, repo: Path) -> None:
    """Apply the task's reference patch to the working tree of ``repo``."""
    _git(repo, "apply", str(task.solution))


def changed_graders(task: Task, repo: Path) -> list[str]:
    """The task's test files (``GRADER_GLOB``) whose text in ``repo`` is not the task's own."""
    return sorted(str(original.relative_to(task.folder / "repo")) for original in
                  (task.folder / "repo").rglob(GRADER_GLOB)
                  if not (repo / original.relative_to(task.folder / "repo")).is_file()
                  or (repo / original.relative_to(task.folder / "repo")).read_text()
                  != original.read_text())


def verify(task: Task, repo: Path, env: dict[str, str] | None = None) -> Verdict:
    """Run the task's verify command in ``repo`` through the shell, as robot-to's gate does."""
    try:
        done = subprocess.run(task.verify, shell=True, cwd=repo, capture_output=True, text=True,
                              env=env, stdin=subprocess.DEVNULL, timeout=VERIFY_TIMEOUT,
                              start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        return Verdict(False, f"[{exc.cmd!r} timed out after {VERIFY_TIMEOUT:g}s]")
    return Verdict(done.returncode == 0, done.stdout + done.stderr)
