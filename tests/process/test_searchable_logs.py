"""Logs an operator can search: every stderr line of a JSON-logging robotd is one object naming the
robot and the message in hand, and a waiting robotd says why it waits. Real processes throughout;
the model is the script server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from robotlab.testing import serve_script
from tests.process.conftest import ROBOT_READY, Processes, broker_argv, is_live, ping
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def entries(text: str) -> list[dict[str, Any]]:
    """Each line of ``text`` as JSON (a line that is not fails the test, naming it)."""
    parsed = []
    for line in text.splitlines():
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"a stderr line that is not JSON: {line!r}\nall of stderr:\n{text}")
    return parsed


def test_a_json_robotd_writes_only_json_lines_naming_the_robot_and_the_message(
        processes: Processes, tmp_path: Path, endpoint: str) -> None:
    # Given a broker, and a served robot logging JSON at DEBUG, so that litellm has lines to write
    # (its stderr alone, in a file of its own)
    processes.keep(broker_argv(endpoint), lambda proc: ping(endpoint), name="broker")
    stderr = tmp_path / "robotd.stderr"
    with serve_script([{"content": "hello back"}]) as api:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", "sage", "--broker", endpoint, "--system-prompt",
                "You help.", "--model", "openai/gpt-4o-mini", "--api-base", api, "--serve", "--log-format", "json",
                "--log-level", "DEBUG"]
        with open(stderr, "wb") as err:
            robotd = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err)
        try:
            wait_until(lambda: is_live(endpoint, "sage", robotd) or robotd.poll() is not None, timeout=ROBOT_READY,
                       message="sage on the bus")
            # When a message is sent to it and answered
            sent = subprocess.run([sys.executable, "-m", "robotlab.cli", "send", "--broker", endpoint, "--to", "sage",
                                   "--wait", "--timeout", "60", "hi"], capture_output=True, text=True, timeout=120)
            assert sent.returncode == 0 and sent.stdout.strip() == "hello back", sent.stderr
            wait_until(lambda: "done with message" in stderr.read_text(), timeout=10, message="the done line")
        finally:
            robotd.terminate()
            out, _ = robotd.communicate(timeout=30)
    # Then every line it wrote to stderr is one JSON object, the ready line and litellm's included
    # (litellm's own handler, were it left in place, would write each of its lines a second
    # time, as plain text and, below WARNING, to stdout)
    logged = entries(stderr.read_text())
    assert out == b"", out.decode()
    assert all({"time", "level", "logger", "pid", "message"} <= set(e) for e in logged)
    assert any(e["logger"] == "robotlab.robotd" and "robotd sage ready" in e["message"] for e in logged)
    assert any(e["logger"].startswith("LiteLLM") for e in logged), "litellm logs at DEBUG: its lines are JSON too"
    # ... and the line about the message names the robot, its instance and the message's id
    (taken,) = [e for e in logged if "robotd sage: message" in e["message"]]
    assert taken["robot"] == "sage" and taken["instance"] and taken["message_id"] in taken["message"]
