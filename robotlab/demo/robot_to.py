"""An offline robot-to demo: a scripted model fixes a failing test, verified by pytest.

``run_demo(workdir)`` makes a scratch git repository with a bug and a failing test, then
runs a short robot-to loop against a scripted model (served over HTTP in-process, so the
real LLM path runs, with no network). The test file is grader-locked; the gate is pytest.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
OBJECTIVE = "Make the failing test in test_calc.py pass"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _verify_command() -> str:
    python = shlex.quote(sys.executable)
    if importlib.util.find_spec("pytest") is not None:
        return f"{python} -m pytest -q -p no:cacheprovider"
    return f"{python} -c 'import test_calc; test_calc.test_add()'"


def _make_repo(workdir: Path) -> Path:
    repo = workdir / "robot-to-demo"
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST)
    (repo / ".gitignore").write_text("__pycache__/\n")
    commit_scratch_repo(repo, "calc with a failing test")
    return repo


def commit_scratch_repo(repo: Path, message: str) -> None:
    """``git init`` ``repo`` with a local identity and commit everything in it."""
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "robot-to@example.com")
    _git(repo, "config", "user.name", "robot-to")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


def _script(verify: str) -> list[dict[str, Any]]:
    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return {"tool_calls": [{"name": name, "arguments": arguments}]}

    return [
        {"content": "OK"},  # the answer to robot-to's preflight call, made before the branch
        call("read", path="test_calc.py"),
        call("read", path="calc.py"),
        call("edit", path="test_calc.py", old_text="== 5", new_text="== -1"),
        call("edit", path="calc.py", old_text="return a - b", new_text="return a + b"),
        call("bash", command=verify),
        call("submit_iteration_result", success=True, summary="fix add() to return the sum",
             key_changes=["calc.py"], key_learnings=["the test file is locked; fix the code"],
             type="fix", scope="calc", should_fully_stop=True),
        {"content": "The test passes now."},
    ]


def run_demo(workdir: str | Path) -> int:
    """Run the demo in ``workdir``; prints progress and the exit summary; returns the exit code."""
    import robotlab.to
    from robotlab.testing import serve_script

    repo = _make_repo(Path(workdir))
    verify = _verify_command()
    before = subprocess.run(verify, shell=True, cwd=repo, capture_output=True, text=True)
    print(f"robot-to demo in {repo}\nbefore: `{verify}` exits {before.returncode}")
    with serve_script(_script(verify)) as url:
        report = robotlab.to.run(
            OBJECTIVE, work_dir=str(repo), model="openai/scripted", api_base=url, local_guards=True,
            verify_command=verify, protect_paths=["test_calc.py"], commit_format="conventional",
            stop_when="the test suite passes", max_iterations=3, decision_wait_poll=0.1,
            backoff_base=0.1,
        )
    log = subprocess.run(["git", "log", "--oneline"], cwd=repo, capture_output=True,
                         text=True).stdout
    print(f"git log:\n{log}")
    return int(report.exit_code)
