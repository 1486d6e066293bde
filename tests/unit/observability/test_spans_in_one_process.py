"""The spans of one traced process: a failed tool, and a message the broker could not deliver.

Tracing is switched on once per process, so each case runs in a fresh interpreter that
exports to a JSON-lines file, and the test reads the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = '''
from robotlab import Robot, bus
from robotlab.errors import DeliveryFailed
from robotlab.observability import setup, trace_settings
from robotlab.testing import ScriptedLLM
from robotlab.tools import tool

setup(trace_settings(), "one-process")

@tool
def fail(why: str) -> str:
    """Always fails.

    Args:
        why: the reason.
    """
    raise RuntimeError(why)

llm = ScriptedLLM([{"tool_calls": [{"name": "fail", "arguments": {"why": "disk full"}}]},
                   {"content": "gave up"}])
robot = Robot(name="bob", llm=llm, model="scripted-model", local_tools=[fail])
assert robot.run("try", tools="inherit").reply == "gave up"
with bus.connect(None, name="alice") as alice:
    try:
        alice.send("nobody", "hello").wait(5)
    except DeliveryFailed:
        pass
'''


def run_traced(tmp_path: Path) -> list[dict[str, Any]]:
    spans = tmp_path / "spans.jsonl"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OTEL_TRACES_EXPORTER": "jsonl",
           "ROBOT_LAB_TRACES_FILE": str(spans), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in spans.read_text().splitlines()]


def test_a_failed_tool_and_an_undeliverable_message_are_error_spans(tmp_path: Path) -> None:
    spans = {span["name"]: span for span in run_traced(tmp_path)}
    tool, agent = spans["execute_tool fail"], spans["invoke_agent bob"]
    assert tool["status"]["status_code"] == "ERROR" and "disk full" in tool["status"]["description"]
    assert tool["attributes"]["error.type"] == "RuntimeError"
    assert tool["parent_id"] == agent["context"]["span_id"]
    assert "robotlab.cost.usd" not in agent["attributes"]  # an unpriced model: no made-up $0
    route = spans["route nobody"]
    assert route["parent_id"] == spans["send nobody"]["context"]["span_id"]
    assert route["attributes"]["robotlab.delivery.status"] == "undeliverable"
    assert route["attributes"]["robotlab.dlq.id"] and route["status"]["status_code"] == "ERROR"
