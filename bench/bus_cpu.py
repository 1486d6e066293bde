"""CPU per round trip in each process of the pipelined run: what bounds bus throughput.

``bench/bus.py`` measures throughput with 8 requests outstanding. On a machine with fewer
cores than busy threads, that rate is the machine's CPU divided by the CPU one round trip
costs in all processes together, so this script reads that cost: user and system time of the
broker, the echo and the client (every thread, libzmq's included, from ``/proc`` through
psutil) over the same pipelined phase, raw pyzmq and robotlab, interleaved, and per thread of
the robotlab client and echo (which thread does the work).

    python bench/bus_cpu.py [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import msgpack
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus as harness  # noqa: E402  (bench/bus.py: the same peers and the same loop)

Pipeline = Callable[[float], tuple[int, float]]


class Stack(NamedTuple):
    """A running stack: its processes (the client is this one) and its two phases."""

    processes: dict[str, psutil.Process]
    pipeline: Pipeline
    """Round trips with 8 outstanding for the seconds given: how many, and the seconds taken."""
    round_trip: Callable[[], None]
    """One sequential round trip."""


Measure = Callable[[Stack, float], dict[str, object]]


def cpu_seconds(process: psutil.Process) -> tuple[float, float]:
    times = process.cpu_times()
    return times.user, times.system


def threads(process: psutil.Process) -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in process.threads()}


def measure(stack: Stack, seconds: float) -> dict[str, object]:
    """µs of user and system time per round trip in each process over one pipelined phase."""
    processes, pipeline = stack.processes, stack.pipeline
    before = {name: cpu_seconds(p) for name, p in processes.items()}
    before_threads = {name: threads(p) for name, p in processes.items()}
    done, elapsed = pipeline(seconds)
    result: dict[str, object] = {"rate": done / elapsed}
    for name, process in processes.items():
        user, system = (after - start for after, start in zip(cpu_seconds(process), before[name],
                                                              strict=True))
        result[name] = (user / done * 1e6, system / done * 1e6)
        spent = threads(process)
        earlier = before_threads[name]
        result[f"{name} threads"] = sorted(((spent[t] - earlier.get(t, 0.0)) / done * 1e6
                                            for t in spent), reverse=True)
    return result


def raw(seconds: float, measure: Measure = measure) -> dict[str, object]:
    """The raw pyzmq stack, measured by ``measure`` (by default: CPU per round trip, pipelined)."""
    url = f"tcp://127.0.0.1:{harness.free_port()}"
    procs = {"broker": harness.spawn([sys.executable, harness.__file__, "--role", "raw-broker",
                                      "--url", url])}
    time.sleep(0.3)  # as bench/bus.py: the raw peers have no readiness signal
    procs["echo"] = harness.spawn([sys.executable, harness.__file__, "--role", "raw-echo", "--url",
                                   url])
    time.sleep(0.3)
    client, body = harness.RawClient(url), msgpack.packb(harness.PAYLOAD)
    harness.wait_for_echo(client)

    def pipeline(seconds: float) -> tuple[int, float]:
        return harness.raw_pipeline(client, body, seconds)

    def round_trip() -> None:
        client.send(body)
        client.recv()

    try:
        pipeline(0.5)  # warm-up
        return measure(Stack({**{n: psutil.Process(p.pid) for n, p in procs.items()},
                              "client": psutil.Process()}, pipeline, round_trip), seconds)
    finally:
        client.close()
        for p in procs.values():
            p.kill()
            p.wait()


def robotlab(seconds: float, measure: Measure = measure) -> dict[str, object]:
    """robotlab's stack (broker with its journal, echo robotd, BusClient), measured by
    ``measure``."""
    from robotlab import bus

    url = f"tcp://127.0.0.1:{harness.free_port()}"
    procs = {"broker": harness.spawn(harness.broker_argv(url, journal=True)),
             "echo": harness.spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo",
                                    "--broker", url, "--handler", "bus:echo_handler"])}
    try:
        harness.wait_robot(url, "echo")
        with bus.connect(url, name="bench-client") as client:
            def pipeline(seconds: float) -> tuple[int, float]:
                return harness.robotlab_pipeline(client, seconds)

            def round_trip() -> None:
                client.request("echo", harness.PAYLOAD, timeout=10)

            pipeline(0.5)
            return measure(Stack({**{n: psutil.Process(p.pid) for n, p in procs.items()},
                                  "client": psutil.Process()}, pipeline, round_trip), seconds)
    finally:
        for p in procs.values():
            p.terminate()
            p.wait()


def median(runs: list[dict[str, object]], key: str, part: int) -> float:
    return statistics.median(run[key][part] for run in runs)  # type: ignore[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    raws, ours = [], []
    for _ in range(args.rounds):
        raws.append(raw(args.seconds))
        ours.append(robotlab(args.seconds))
    print(f"µs of CPU per round trip, 8 outstanding, medians of {args.rounds} interleaved rounds "
          "(user + system)\n")
    print("| process | raw pyzmq | robotlab | ratio |\n| --- | ---: | ---: | ---: |")
    totals = [0.0, 0.0]
    for name in ("broker", "echo", "client"):
        cells = [median(runs, name, 0) + median(runs, name, 1) for runs in (raws, ours)]
        totals = [t + c for t, c in zip(totals, cells, strict=True)]
        split = f"{median(ours, name, 0):.0f} + {median(ours, name, 1):.0f}"
        print(f"| {name} | {cells[0]:.0f} | {cells[1]:.0f} ({split}) | "
              f"{cells[1] / cells[0]:.2f}x |")
    print(f"| total | {totals[0]:.0f} | {totals[1]:.0f} | {totals[1] / totals[0]:.2f}x |")
    rates = [statistics.median(float(run["rate"]) for run in runs) for runs in (raws, ours)]  # type: ignore[arg-type]
    print(f"| throughput (req/s) | {rates[0]:,.0f} | {rates[1]:,.0f} | "
          f"{rates[1] / rates[0]:.2f}x |")
    for name in ("echo", "client"):
        busiest = [f"{t:.0f}" for t in ours[-1][f"{name} threads"][:4]]  # type: ignore[index]
        print(f"\nrobotlab {name}, µs per round trip by thread (last round, busiest first): "
              f"{', '.join(busiest)}")


if __name__ == "__main__":
    main()
