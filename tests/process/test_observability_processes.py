"""Each robot's cost and load in `robotlab ps` and `top`, against real processes.

A broker and a robotd hosting a robot whose template gives it a tool; the model is the
script server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robotlab.testing import serve_script
from tests.process.conftest import ROBOT_READY, Processes, broker_argv, is_live, ping
from tests.waiting import wait_until

pytestmark = pytest.mark.process

CLOCK_TEMPLATE = """---
description: tells the time
tools: ["handlers:clock"]
---
You tell the time with the clock tool.
"""
TURNS = [
    {"tool_calls": [{"name": "clock", "arguments": {"city": "Oslo"}, "id": "call_1"}],
     "usage": {"prompt_tokens": 30, "completion_tokens": 7}},
    {"content": "It is 12:00 in Oslo.", "usage": {"prompt_tokens": 50, "completion_tokens": 9}},
]
RUN_WITH_TOOLS = json.dumps({"message": "What time is it in Oslo?", "kwargs": {"tools": "inherit"}})


def traced(tmp_path: Path, who: str) -> dict[str, str]:
    """The environment that makes a process export its spans to ``tmp_path/who.jsonl``."""
    return {"OTEL_TRACES_EXPORTER": "jsonl", "ROBOTLAB_TRACES_FILE": str(tmp_path / f"{who}.jsonl"),
            "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_SERVICE_NAME": who}


def spans_in(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``robotlab ARGS`` with the test's environment plus ``env``."""
    return subprocess.run([sys.executable, "-m", "robotlab.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


@pytest.fixture
def script_api() -> Iterator[Any]:
    """``script_api(turns) -> url``: script servers for the test, stopped at teardown."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield lambda turns: stack.enter_context(serve_script(turns))


def start_crew(processes: Processes, tmp_path: Path, endpoint: str, api: str, model: str, trace: bool = False) -> None:
    """A broker and robotd ``clock`` (its template, ``model`` at ``api``, serving), both live; traced if asked."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "clock.md").write_text(CLOCK_TEMPLATE)
    processes.keep(broker_argv(endpoint), lambda proc: ping(endpoint), env=traced(tmp_path, "broker") if trace else None,
                   name="broker")
    robotd = [sys.executable, "-m", "robotlab.robotd", "--name", "clock", "--broker", endpoint, "--prompts-dir",
              str(tmp_path / "prompts"), "--template", "clock", "--model", model, "--api-base", api, "--serve"]
    processes.keep(robotd, lambda proc: is_live(endpoint, "clock", proc), env=traced(tmp_path, "robotd") if trace else None,
                   name="robotd-clock", timeout=ROBOT_READY)


def ps_rows(endpoint: str) -> list[dict[str, Any]]:
    done = cli("ps", "--broker", endpoint, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_ps_and_top_show_a_robots_load_and_an_unknown_price_while_it_works(
        processes: Processes, tmp_path: Path, endpoint: str, script_api: Any) -> None:
    # Given a robot whose model has no price, busy on a slow model call
    api = script_api([{"content": "late", "delay": 30, "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
                      {"content": "quick", "usage": {"prompt_tokens": 12, "completion_tokens": 3}}])
    start_crew(processes, tmp_path, endpoint, api, "openai/scripted")
    asker = processes.start([sys.executable, "-m", "robotlab.cli", "send", "--broker", endpoint, "--to", "clock",
                             "--wait", "--timeout", "60", "hello"], name="send")
    # Then ps shows the delivery in flight, its age, and the robot at work
    busy = wait_until(lambda: [r for r in ps_rows(endpoint) if r["in_flight"] == 1 and (r["oldest"] or 0) > 0.5
                               and r.get("status") == "running"], timeout=30, message="the busy robot in ps")[0]
    assert busy["cost"] == "unknown"  # no price: never a made-up 0
    table = cli("ps", "--broker", endpoint)
    assert table.returncode == 0, table.stderr
    header, line = table.stdout.splitlines()[:2]
    assert header.split()[:8] == ["NAME", "INSTANCE", "STATE", "IN", "FLIGHT", "OLDEST", "TOKENS", "COST"]
    assert line.split()[0] == "clock" and "unknown" in line and "running" in line
    # And top, off a terminal, prints the same table each interval until Ctrl-C, then exits 0
    top = subprocess.Popen([sys.executable, "-m", "robotlab.cli", "top", "--broker", endpoint, "--interval", "0.2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen: list[str] = []
        wait_until(lambda: _read_until(top, seen, "Ctrl-C to quit", 2), timeout=30, message="two frames of top")
    finally:
        top.send_signal(signal.SIGINT)
        out, err = top.communicate(timeout=15)
    assert top.returncode == 0, err
    frame = "".join(seen)
    assert "1 member" in frame and "clock" in frame and "unknown" in frame and "IN FLIGHT" in frame
    asker.popen.kill()


def _read_until(proc: subprocess.Popen[str], seen: list[str], marker: str, count: int) -> bool:
    assert proc.stdout is not None
    seen.append(proc.stdout.readline())
    return sum(marker in line for line in seen) >= count


def test_top_once_prints_one_frame_and_says_when_no_robot_is_on_the_bus(start_broker, endpoint: str) -> None:
    start_broker(endpoint)
    done = cli("top", "--broker", endpoint, "--once")
    assert done.returncode == 0, done.stderr
    assert "0 members" in done.stdout and "no robots on the bus" in done.stdout
    assert done.stdout.count("Ctrl-C to quit") == 1
