"""What a standby pair's journal replication costs: the bus round trip through one journaled
broker, and through the active broker of a pair whose backup holds every commit before a
receipt goes out (``--standby-sync on``) or not (``off``), interleaved in one run.

Each side runs a broker (or two), an echo robotd and this client on tcp loopback, as
``bench/bus.py`` does, and measures p50/p99 of sequential round trips and throughput with 8
outstanding, twice: plain requests and ``any`` requests, whose DELIVER waits for no commit but,
the first time a member is handed one, the one that writes that member (on a pair, also the
backup's ack of that record). Beside the latency,
the CPU the broker processes spend per sequential round trip (both brokers of a pair): on a
machine with fewer cores than busy processes the latency moves with the scheduler from run to
run, the CPU much less.

    python bench/bus_standby.py [--n 2000] [--seconds 2] [--rounds 3] [--write]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import psutil
from bus import PAYLOAD, alternate, free_port, latency, spawn, wait_robot, write_section

KINDS = ("plain", "any")
SIDES = ("one broker", "pair, sync on", "pair, sync off")


def brokers(side: str) -> tuple[str, list[list[str]]]:
    """The client's URL and the broker command lines of one side."""
    folder = tempfile.mkdtemp(prefix="rl-bench-")
    a, b = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    common = [sys.executable, "-m", "robotlab.cli", "broker", "--log-level", "WARNING"]
    if side == "one broker":
        return a, [[*common, "--bind", a, "--journal", os.path.join(folder, "a.db")]]
    state_a, state_b = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    sync = ["--standby-sync", "on" if side == "pair, sync on" else "off"]
    return f"{a},{b}", [
        [*common, "--bind", a, "--journal", os.path.join(folder, "a.db"), "--standby", "primary",
         "--state-bind", state_a, "--peer", state_b, *sync],
        [*common, "--bind", b, "--journal", os.path.join(folder, "b.db"), "--standby", "backup",
         "--state-bind", state_b, "--peer", state_a, *sync],
    ]


def measure(client: Any, n: int, seconds: float, brokers_cpu: Callable[[], float],
            **options: Any) -> dict[str, float]:
    before = brokers_cpu()
    p50, p99 = latency(lambda i: client.request("echo", PAYLOAD, timeout=10, **options), n)
    # the CPU the broker processes spent per sequential round trip (the 200 warm-up ones too):
    # what the pair adds whatever the machine's scheduling does to the latency
    cpu = (brokers_cpu() - before) / (n + 200) * 1e6
    window = [client.send_request("echo", PAYLOAD, **options) for _ in range(8)]
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        window.pop(0).reply(10)
        done += 1
        window.append(client.send_request("echo", PAYLOAD, **options))
    elapsed = time.perf_counter() - start
    for tracker in window:
        tracker.reply(10)
    return {"p50": p50, "p99": p99, "rate": done / elapsed, "cpu": cpu}


def run(side: str, n: int, seconds: float) -> dict[str, float]:
    """Both kinds of request through one side; keys like ``any p50``."""
    from robotlab import bus

    url, argvs = brokers(side)
    procs = [spawn(argv) for argv in argvs]
    procs.append(spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo", "--broker", url,
                        "--handler", "bus:echo_handler"]))
    try:
        wait_robot(url, "echo")
        numbers: dict[str, float] = {}
        broker_processes = [psutil.Process(p.pid) for p in procs[:len(argvs)]]

        def brokers_cpu() -> float:
            return sum(t.user + t.system for t in (b.cpu_times() for b in broker_processes))

        with bus.connect(url, name="bench-client") as client:
            for kind in KINDS:
                got = measure(client, n, seconds, brokers_cpu,
                              **({"any": True} if kind == "any" else {}))
                numbers.update({f"{kind} {key}": value for key, value in got.items()})
        return numbers
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def table(results: list[dict[str, float]]) -> str:
    one = results[0]
    lines = ["| request | measure | " + " | ".join(SIDES) + " |",
             "| --- | --- |" + " ---: |" * len(SIDES)]
    for kind in KINDS:
        for key, name in (("p50", "round trip p50 (ms)"), ("p99", "round trip p99 (ms)"),
                          ("rate", "throughput, 8 outstanding (req/s)"),
                          ("cpu", "brokers' CPU per round trip (µs)")):
            cells = []
            for result in results:
                value, base = result[f"{kind} {key}"], one[f"{kind} {key}"]
                cost = value / base - 1 if key != "rate" else 1 - value / base
                shown = f"{value:,.0f}" if key == "cpu" else f"{value:,.3f}"
                cells.append(shown if result is one else f"{shown} ({cost:+.1%})")
            lines.append(f"| {kind} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds; medians are reported")
    parser.add_argument("--write", action="store_true",
                        help="record the results in docs/benchmarks.md")
    args = parser.parse_args()
    results = alternate(args.rounds,
                        *(lambda side=side: run(side, args.n, args.seconds) for side in SIDES))
    text = table(results)
    print(text)
    if args.write:
        note = (f"`python bench/bus_standby.py --n {args.n} --seconds {args.seconds:g} --rounds "
                f"{args.rounds} --write`, "
                f"{time.strftime('%Y-%m-%d')}, medians of {args.rounds} interleaved rounds, "
                f"{os.cpu_count()} cores, "
                "tcp loopback. The cost in brackets is against one journaled broker. Target: "
                "replication "
                "costs under 30% of round-trip p50.")
        write_section("Standby pair: the cost of replicating the journal", f"{note}\n\n{text}")


if __name__ == "__main__":
    main()
