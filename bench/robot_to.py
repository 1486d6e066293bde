"""robot-to orchestration time per iteration, model and gate excluded.

Builds a scratch git repository of 1,000 files, then runs robot-to through its Python API
with a scripted model (an in-process OpenAI-compatible stub server) for N iterations, each
writing one file and submitting success, with no verify command (the null eval). From
``run.log`` it takes, per iteration, the wall time from ``iteration:start`` to the next
iteration's start (or the run's end) and subtracts the agent phase (``agent:run:start`` to
``agent:run:end``: the child's robot build, the stub model's HTTP round trips and the tool
calls). What is left is orchestration: prompt build (``git ls-files``, notes), the fork of
the iteration's child, the eval call, ``git add``/``diff``/``commit``, notes, ``run.json``
and the grader-lock hash check. Target: under 300 ms.

Usage: ``.venv/bin/python bench/robot_to.py [--files 1000] [--iterations 20] [--runs 3]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import robotlab.to
from robotlab.demo.robot_to import commit_scratch_repo
from robotlab.testing import serve_script
from robotlab.to.runner.orchestrator import Streams


def make_repo(root: Path, files: int) -> Path:
    """A repository with ``files`` small tracked files in 50 directories."""
    repo = root / "repo"
    for i in range(files):
        path = repo / f"pkg{i % 50}" / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE_{i} = {i}\n")
    commit_scratch_repo(repo, "initial")
    return repo


def script(iterations: int) -> list[dict[str, Any]]:
    """Per iteration: write one file, submit success, finish."""
    turns: list[dict[str, Any]] = []
    for i in range(iterations):
        turns += [
            {"tool_calls": [{"name": "write",
                             "arguments": {"path": f"new/file_{i}.py", "content": f"X = {i}\n"}}]},
            {"tool_calls": [{"name": "submit_iteration_result",
                             "arguments": {"success": True, "summary": f"add {i}"}}]},
            {"content": "done"},
        ]
    return turns


def _ts(event: dict[str, Any]) -> float:
    return dt.datetime.fromisoformat(event["ts"]).timestamp()


def orchestration_ms(events: list[dict[str, Any]]) -> list[float]:
    """Per iteration: total wall time minus the agent phase, in milliseconds."""
    starts = [i for i, e in enumerate(events) if e["event"] == "iteration:start"]
    result = []
    for k, first in enumerate(starts):
        last = starts[k + 1] if k + 1 < len(starts) else next(
            i for i, e in enumerate(events) if e["event"] == "orchestrator:end")
        window = events[first:last + 1]
        agent = sum(
            _ts(end) - _ts(start)
            for start, end in zip(
                [e for e in window if e["event"] == "agent:run:start"],
                [e for e in window if e["event"] == "agent:run:end"], strict=False)
        )
        result.append((_ts(events[last]) - _ts(events[first]) - agent) * 1000)
    return result


def one_run(files: int, iterations: int) -> list[float]:
    """Orchestration milliseconds of every iteration of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp), files)
        with serve_script(script(iterations)) as url:
            report = robotlab.to.run(
                "benchmark the loop", work_dir=str(repo), model="openai/scripted", api_base=url,
                max_iterations=iterations, local_guards=True,
                streams=Streams(io.StringIO(), io.StringIO(), False), preflight=False,
                # the script holds no answer for it, and it is start-up, not per iteration
            )
        assert report.run is not None and report.run.commits == iterations, report.summary
        log = repo / report.run.run_dir / "run.log"
        return orchestration_ms([json.loads(line) for line in log.read_text().splitlines()])


def main() -> None:
    """Run the benchmark and print a Markdown table row per run plus the median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    medians = []
    print("| run | iterations | p50 ms | p90 ms | max ms |")
    print("| --- | --- | --- | --- | --- |")
    for run in range(1, args.runs + 1):
        times = sorted(one_run(args.files, args.iterations))
        medians.append(statistics.median(times))
        p90 = times[int(len(times) * 0.9) - 1]
        print(f"| {run} | {len(times)} | {statistics.median(times):.0f} | {p90:.0f} | "
              f"{times[-1]:.0f} |")
    verdict = "meets" if statistics.median(medians) < 300 else "misses"
    print(f"\nmedian of run medians: {statistics.median(medians):.0f} ms ({verdict} the 300 ms "
          "target)")


if __name__ == "__main__":
    main()
