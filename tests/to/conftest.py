"""Fixtures for robot-to: a real temporary git repository and scripted-model runs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import robotlab.to
from robotlab.testing import serve_script
from robotlab.to.runner.orchestrator import RunReport, Streams


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return its stdout."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository with one commit, as the current directory; no ROBOT_LAB_TO_* leaks in."""
    for key in list(__import__("os").environ):
        if key.startswith("ROBOT_LAB_TO_") or key == "OPENAI_API_BASE":
            monkeypatch.delenv(key)
    # Scripts are written turn for turn and the preflight call would take the first turn, so it
    # is off (for the Python API, the CLI and child processes alike); test_preflight.py turns it on.
    monkeypatch.setenv("ROBOT_LAB_TO_PREFLIGHT", "false")
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "robot@example.com")
    git(path, "config", "user.name", "Robot")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    monkeypatch.chdir(path)
    return path


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A scripted turn calling one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def submit(success: bool = True, summary: str = "did it", **extra: Any) -> dict[str, Any]:
    """A scripted turn calling submit_iteration_result."""
    return call("submit_iteration_result", success=success, summary=summary, **extra)


DONE = {"content": "done"}


def write_and_submit(path: str, content: str, summary: str = "did it",
                     **extra: Any) -> list[dict[str, Any]]:
    """One robot run: write a file, submit success, end."""
    return [call("write", path=path, content=content), submit(True, summary, **extra), DONE]


class Runner:
    """Runs robot-to through the Python API against a scripted model server."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.url = ""

    @contextlib.contextmanager
    def serving(self, turns: list[dict[str, Any]]) -> Iterator[str]:
        """Serve ``turns`` for several runs (a run and its resume share one script)."""
        with serve_script(turns) as url:
            self.url = url
            yield url

    def _streams(self) -> Streams:
        return Streams(self.out, self.err, live=False)

    def run(self, turns: list[dict[str, Any]] | None = None, objective: str = "Improve the project",
            **settings: Any) -> RunReport:
        if turns is not None:
            with self.serving(turns):
                return self.run(None, objective, **settings)
        base = {"model": "openai/scripted", "api_base": self.url, "backoff_base": 0.01,
                "decision_wait_poll": 0.05}
        return robotlab.to.run(objective, work_dir=str(self.repo), streams=self._streams(),
                               **{**base, **settings})

    def resume(self, run_id: str, **settings: Any) -> RunReport:
        return robotlab.to.resume(run_id, work_dir=str(self.repo), streams=self._streams(),
                                  **settings)

    def run_dir(self, report: RunReport) -> Path:
        assert report.run is not None
        return self.repo / report.run.run_dir

    def events(self, report: RunReport) -> list[dict[str, Any]]:
        lines = (self.run_dir(report) / "run.log").read_text().splitlines()
        return [json.loads(line) for line in lines]

    def notes(self, report: RunReport) -> str:
        return (self.run_dir(report) / "notes.md").read_text()

    def subjects(self) -> list[str]:
        return git(self.repo, "log", "--format=%s").splitlines()


@pytest.fixture
def runner(repo: Path) -> Runner:
    """A Runner in the ``repo`` fixture."""
    return Runner(repo)


def names(events: list[dict[str, Any]]) -> list[str]:
    """The event names, in order."""
    return [event["event"] for event in events]


Turns = Callable[..., list[dict[str, Any]]]


@contextlib.contextmanager
def script_server_process(tmp_path: Path, turns: list[dict[str, Any]]) -> Iterator[str]:
    """A script server in its own process (a signal sent to robot-to must not reach it)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(turns))
    server = subprocess.Popen([sys.executable, "-m", "robotlab.testing.llm_server", "--script",
                               str(script), "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("LISTENING "), line
        yield line.split()[1]
    finally:
        server.terminate()
        server.wait(timeout=10)


_STARTED: list[subprocess.Popen[str]] = []
"""The robot-to processes the running test started, ended by ``_end_robot_to_processes``."""


def robot_to_process(repo: Path, url: str, *args: str,
                     env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``robot-to work --model openai/scripted --api-base URL ARGS`` as a child process in ``repo``
    (``env``: variables added to this process's environment); killed after the test if it still
    runs."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from robotlab.cli.robot_to import main; main()", "work",
         "--model", "openai/scripted", "--api-base", url, *args],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )
    _STARTED.append(process)
    return process


@pytest.fixture(autouse=True)
def _end_robot_to_processes() -> Iterator[None]:
    """A test that failed while its robot-to ran must not leave the process (nor its pipes) to
    be collected during a later test, which would then fail for it."""
    yield
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
