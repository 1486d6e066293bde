"""Framework overhead of ``Robot.run`` over a bare litellm completion, against the script server.

Both sides send the same system prompt and user message to the same OpenAI-compatible script
server (a separate process) through litellm; calls are interleaved so drift hits both alike.
The overhead is p50(Robot.run) - p50(litellm.completion); the target is under 5 ms.

    .venv/bin/python bench/overhead.py [--calls 300] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SYSTEM = "You are a terse assistant."
PROMPT = "Say ok."


def start_server(turns: int) -> tuple[subprocess.Popen[str], str]:
    script = Path(tempfile.mkdtemp()) / "script.json"
    script.write_text(json.dumps([{"content": "ok"}] * turns))
    process = subprocess.Popen(
        [sys.executable, "-m", "robotlab.testing.llm_server", "--script", str(script)],
        stdout=subprocess.PIPE, text=True,
    )
    line = process.stdout.readline() if process.stdout else ""
    if not line.startswith("LISTENING "):
        process.kill()
        raise SystemExit(f"script server did not start: {line!r}")
    return process, line.split()[1]


def measure(calls: int, url: str) -> tuple[list[float], list[float]]:
    from robotlab.config.cascade import prepare_litellm_environment

    prepare_litellm_environment()  # before litellm is imported, so it never fetches prices
    import litellm

    import robotlab

    robot = robotlab.build(name="bench", system_prompt=SYSTEM, model="openai/scripted",
                           api_base=url)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    bare, framed = [], []
    for _ in range(calls):
        started = time.perf_counter()
        litellm.completion(model="openai/scripted", api_base=url, api_key="not-needed",
                           messages=messages, max_retries=3, timeout=120)
        bare.append(time.perf_counter() - started)
        robot.clear_messages()
        started = time.perf_counter()
        robot.run(PROMPT)
        framed.append(time.perf_counter() - started)
    return bare, framed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="measured calls per side per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    process, url = start_server(2 * (args.warmup + args.calls * args.runs))
    try:
        measure(args.warmup, url)
        results = []
        for run in range(args.runs):
            bare, framed = measure(args.calls, url)
            p50_bare, p50_robot = statistics.median(bare) * 1000, statistics.median(framed) * 1000
            results.append(p50_robot - p50_bare)
            print(f"run {run + 1}: litellm p50 {p50_bare:.2f} ms, Robot.run p50 {p50_robot:.2f} "
                  f"ms, overhead {p50_robot - p50_bare:+.2f} ms")
    finally:
        process.terminate()
        process.wait(timeout=10)
    overhead = statistics.median(results)
    verdict = "PASS" if overhead < 5.0 else "FAIL"
    print(f"median overhead over {args.runs} runs: {overhead:+.2f} ms (target < 5 ms): {verdict}")
    return 0 if overhead < 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
