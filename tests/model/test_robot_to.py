"""robot-to on a small repository against the real model: bounded, honest records, a clean tree.

Whether a 0.5B model solves the task is the benchmark's question (bench/robot_to_real.py),
not this test's: here every outcome robot-to can reach must leave the same honest trail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.model.conftest import ModelServer

BUDGET = 600
"""Seconds the run may take: one iteration of a few model calls at this model's speed (each
reading a prompt of about 1,400 tokens), on a CPU shared with the rest of CI."""


def git(repo: Path, *argv: str) -> str:
    return subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True,
                          text=True).stdout


def small_repo(path: Path) -> Path:
    path.mkdir()
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (path / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "robot@example.com")
    git(path, "config", "user.name", "Robot")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def test_robot_to_runs_bounded_and_leaves_an_honest_record(tmp_path: Path,
                                                           model_server: ModelServer) -> None:
    repo = small_repo(tmp_path / "repo")
    robot_to = str(Path(sys.executable).with_name("robot-to"))
    argv = [robot_to, "Fix add in calc.py so that test_calc.py passes.", "--provider", "openai",
            "--model", "qwen2.5-coder-0.5b-instruct", "--api-base", model_server.url,
            "--verify", f"{sys.executable} -m pytest -q test_calc.py", "--max-iterations", "1",
            "--max-output-tokens", "384", "--call-timeout", "150", "--iteration-timeout", "420",
            "--local-guards"]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=BUDGET,
                          # No backoff-and-retry of a failed iteration: this test is about one
                          # iteration's record.
                          env={**os.environ, "OPENAI_API_KEY": "not-needed",
                               "ROBOT_LAB_TO_MAX_RETRIES": "0"})
    took = time.monotonic() - started
    assert done.returncode in (0, 1), (done.returncode, done.stdout, done.stderr)
    (run_dir,) = (repo / ".robot_lab_to" / "runs").iterdir()
    state = json.loads((run_dir / "run.json").read_text())
    assert (run_dir / "notes.md").is_file() and (run_dir / "run.log").is_file()
    # The counters add up: every iteration was committed, rolled back, or changed nothing.
    assert state["iteration"] == state["commits"] + state["rolled_back"] + state["no_change"], state
    # Every commit robot-to made passed the verify command; nothing uncommitted is left behind.
    for commit in git(repo, "log", "--format=%H", "main..HEAD").split():
        git(repo, "checkout", "-q", commit)
        assert subprocess.run([sys.executable, "-m", "pytest", "-q", "test_calc.py"],
                              cwd=repo).returncode == 0
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert took < BUDGET
