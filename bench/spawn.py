"""Spawn benchmark: ``Robot.spawn`` through the warm fork server vs a cold ``robotd`` start.

A broker process on tcp loopback, a script server (the stub model) in this process, and a
parent robot here. Measures:

- spawn to a child answering on the bus: ``parent.spawn(...)`` until the child's first reply
  (a ``robot.info`` request), p50 and p99;
- the unique memory (psutil USS) each child holds, once idle after that first reply and
  again after one ``run`` through the stub model, and its Private_Dirty then (the pages it
  wrote since the fork, from /proc/PID/smaps_rollup);
- for comparison, a cold ``robotd --serve`` started by hand, until it answers the same way;
- with ``--pages`` (as root), the first child's copied pages described by the objects on them
  (``bench/page_types.py``).

    python bench/spawn.py [--children 30] [--cold 3] [--model openai/scripted] [--write] [--pages]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024


def uss_mb(pid: int) -> float:
    """Unique set size of ``pid`` in MB: what the process holds that nobody shares."""
    return psutil.Process(pid).memory_full_info().uss / MB


def private_dirty_mb(pid: int) -> float:
    """Private_Dirty of ``pid`` in MB (/proc/PID/smaps_rollup): pages written since the fork."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no Private_Dirty line in /proc/{pid}/smaps_rollup")


def dirty_by_mapping(pid: int) -> Counter[str]:
    """Private_Dirty kB of ``pid`` per kind of mapping: the heap, anonymous memory, each library."""
    dirty: Counter[str] = Counter()
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields[0].startswith("Private_Dirty:"):
            dirty[name] += int(fields[1])
        # a mapping's header line: address range, perms, ..., path
        elif not fields[0].endswith(":"):
            path = fields[5] if len(fields) > 5 else ""
            name = ANONYMOUS if not path else path if path.startswith("[") else Path(path).name
    return dirty


ANONYMOUS = "anonymous (pymalloc arenas, thread stacks)"


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(round(len(ordered) * share)) - 1)]


def measure_spawns(parent, count: int, server_pid: int | None = None) -> dict[str, Any]:
    """Spawn ``count`` children one after another; time each until it answers; measure USS."""
    times, handles = [], []
    for i in range(count):
        start = time.perf_counter()
        handle = parent.spawn(name=f"kid{i}", system_prompt="You help.")
        handle.info()
        times.append((time.perf_counter() - start) * 1000)
        handles.append(handle)
    idle = [uss_mb(h.pid) for h in handles]
    before = dirty_by_mapping(handles[0].pid)
    for handle in handles:
        handle.run("hello")
    working = [uss_mb(h.pid) for h in handles]
    dirty = [private_dirty_mb(h.pid) for h in handles]
    grown = dirty_by_mapping(handles[0].pid)
    grown.subtract(before)
    pages = None
    if server_pid is not None:
        from page_types import describe

        pages = describe(handles[0].pid, server_pid)
    for handle in handles:
        handle.stop()
    return {"p50": statistics.median(times), "p99": percentile(times, 0.99), "first": times[0],
            "uss_idle": statistics.median(idle), "uss_working": statistics.median(working),
            "dirty_working": statistics.median(dirty),
            "grown": dict(grown.most_common(5)), "pages": pages}


def measure_cold(url: str, api: str, parent, rounds: int) -> dict[str, float]:
    """Start ``robotd --serve`` by hand ``rounds`` times; time each until it answers; its USS."""
    from robotlab.robot.spawn import RemoteRobot

    times, memory = [], []
    for i in range(rounds):
        name = f"cold{i}"
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", url,
                "--system-prompt", "You help.", "--model", parent.model, "--api-base", api,
                "--serve"]
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not any(row["name"] == name for row in parent.bus.admin("ps")):
            time.sleep(0.005)
        RemoteRobot(name, parent).info()
        times.append((time.perf_counter() - start) * 1000)
        memory.append(uss_mb(proc.pid))
        proc.terminate()
        proc.wait(10)
    return {"p50": statistics.median(times), "uss": statistics.median(memory)}


def run(children: int, cold: int, model: str,
        pages: bool = False) -> tuple[dict[str, float], dict[str, Any],
                                                                          dict[str, float]]:
    from robotlab import Robot
    from robotlab.robot.spawn import start_fork_server
    from robotlab.testing import serve_script

    sys.path.insert(0, str(ROOT / "bench"))
    from bus import free_port

    url = f"tcp://127.0.0.1:{free_port()}"
    broker = subprocess.Popen([sys.executable, "-m", "robotlab.cli", "broker", "--bind", url,
                               "--log-level", "WARNING", "--no-journal"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    turns = [{"content": "hi"}] * (children + cold + 5)
    try:
        with serve_script(turns) as api:
            time.sleep(0.5)  # a benchmark, not a test: the broker has no readiness signal here
            parent = Robot(name="bench", bus=url, model=model, api_base=api)
            start = time.perf_counter()
            server = start_fork_server(warm=True)
            # the first server's, if the warm-up died
            warm_pid = server.warm_pid or server.process.pid
            warm = {"seconds": time.perf_counter() - start, "uss": uss_mb(warm_pid)}
            spawned = measure_spawns(parent, children, warm_pid if pages else None)
            started = measure_cold(url, api, parent, cold)
            parent.leave_bus()
    finally:
        broker.terminate()
        broker.wait(10)
    return warm, spawned, started


def report(warm: dict[str, float], spawned: dict[str, Any], cold: dict[str, float],
           children: int) -> str:
    rows = [
        ("spawn to first reply, p50", f"{spawned['p50']:.1f} ms", "under 50 ms"),
        ("spawn to first reply, p99", f"{spawned['p99']:.1f} ms", ""),
        ("cold `robotd --serve` to first reply, p50", f"{cold['p50']:.0f} ms", "for comparison"),
        ("unique memory per child, idle (USS, median)", f"{spawned['uss_idle']:.2f} MB",
         "under 15 MB"),
        ("unique memory per child after one run (USS, median)", f"{spawned['uss_working']:.2f} MB",
         "under 15 MB"),
        ("private dirty memory per child after one run (smaps_rollup, median)",
         f"{spawned['dirty_working']:.2f} MB", "under 15 MB"),
        ("unique memory of a cold robotd (USS)", f"{cold['uss']:.1f} MB", "for comparison"),
        ("fork server warm-up (once per process)", f"{warm['seconds']:.1f} s", ""),
        ("fork server unique memory", f"{warm['uss']:.1f} MB", "shared by its children"),
    ]
    lines = [f"{children} children spawned one after another.", "",
             "| measure | result | target |", "| --- | ---: | --- |"]
    lines += [f"| {name} | {value} | {target} |" for name, value, target in rows]
    lines += ["", "Where the first child's first run wrote (Private_Dirty growth per mapping, "
                  "/proc/PID/smaps):", "",
              "| mapping | grew by |", "| --- | ---: |"]
    lines += [f"| {name} | {kb:,} kB |" for name, kb in spawned["grown"].items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--children", type=int, default=30)
    parser.add_argument("--cold", type=int, default=3, help="cold robotd starts to time")
    parser.add_argument("--model", default="openai/scripted",
                        help="the children's model name (the stub answers any; litellm prices "
                             "some, not this one)")
    parser.add_argument("--write", action="store_true",
                        help="record the results in docs/benchmarks.md")
    parser.add_argument("--pages", action="store_true",
                        help="describe the first child's copied pages by the objects on them "
                             "(bench/page_types.py; root)")
    args = parser.parse_args()
    warm, spawned, cold = run(args.children, args.cold, args.model, args.pages)
    table = report(warm, spawned, cold, args.children)
    print(table)
    if spawned["pages"]:
        from page_types import render

        print(render(spawned["pages"]))
    if args.write:
        from bus import write_section

        note = (f"`python bench/spawn.py --children {args.children} --cold {args.cold} --model "
                f"{args.model} --write`, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores "
                f"shared with other work (load average {os.getloadavg()[0]:.1f} at the end). "
                "Targets from DESIGN.md section 7. A child's unique memory is the pages of the "
                "fork server it has written to since the fork (CPython writes a reference count "
                "into every object it touches), so the figures that matter are after its first "
                "model call; the steps that brought them down are in the next section.")
        write_section("Spawn (fork server) vs a cold robotd", f"{note}\n\n{table}")


if __name__ == "__main__":
    main()
