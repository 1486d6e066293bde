"""A traced robot-to run: one trace from the run through each iteration to its robot's model and
tool calls, made in the iteration's forked child. robot-to runs as its own process (tracing is
switched on once per process), exporting to a JSON-lines file as an operator would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from robotlab.testing import serve_script
from tests.process.test_observability_processes import spans_in, traced
from tests.to.conftest import DONE, call, submit


def test_one_trace_spans_the_run_its_iteration_and_the_childs_robot(
        repo: Path, tmp_path: Path) -> None:
    env = {**os.environ, **traced(tmp_path, "robot-to")}
    with serve_script([call("write", path="a.txt", content="x\n"), submit(True), DONE]) as url:
        done = subprocess.run([sys.executable, "-c",
                               "from robotlab.cli.robot_to import main; main()", "Do work",
                               "--model", "openai/scripted", "--api-base", url, "--local-guards",
                               "--max-iterations", "1",
                               "--json"], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=240)
    assert done.returncode == 0, done.stderr
    # The orchestrator flushes at exit and the child before its os._exit: every span is in the file.
    spans = spans_in(tmp_path / "robot-to.jsonl")
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"].split(" ")[0], []).append(span)
    (run,), (iteration,) = by_name["robot-to"], by_name["iteration"]
    (agent,) = by_name["invoke_agent"]
    assert len({s["context"]["trace_id"] for s in spans}) == 1 and run["parent_id"] is None
    assert iteration["parent_id"] == run["context"]["span_id"]
    assert agent["parent_id"] == iteration["context"]["span_id"]  # made in the forked child
    assert agent["name"].startswith("invoke_agent robot-to-")
    assert agent["attributes"]["gen_ai.usage.input_tokens"] == 30
    assert [s["parent_id"] for s in by_name["chat"]] == [agent["context"]["span_id"]] * 3
    tools = sorted(s["attributes"]["gen_ai.tool.name"] for s in by_name["execute_tool"])
    assert tools == ["submit_iteration_result", "write"]
    assert iteration["attributes"]["robotlab.iteration.outcome"] == "commit"
    assert (run["attributes"]["robotlab.commits"],
            run["attributes"]["gen_ai.usage.output_tokens"]) == (1, 15)
