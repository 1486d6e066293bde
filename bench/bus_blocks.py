"""The bus round trip's p50 against raw pyzmq, both stacks up at once and measured in turns.

``bench/bus.py`` starts each stack afresh for every round and compares medians of three rounds,
minutes apart; on a shared two-core guest the raw baseline's own p50 moves by a fifth between
such rounds. Here both stacks (the raw forwarder, DEALER echo and client of ``bench/bus.py``;
``robotlab broker`` with its journal, the echo robotd and a ``BusClient``) run side by side for
the whole measurement, and the client takes ``--per`` sequential round trips on one, then on the
other, ``--blocks`` times, the order reversed every block: each side sees the same minutes. Each
side's p50 is over all its round trips.

``--control`` measures two stacks of the same kind instead (``raw,raw`` or ``robotlab,robotlab``):
their ratio should be 1.00x, and how far it strays is the method's own error.

    python bench/bus_blocks.py [--per 150] [--blocks 30] [--control raw,raw]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus as bench_bus  # noqa: E402  (bench/bus.py: the raw peers and the robotlab processes)

Stack = tuple[list[Any], Callable[[], Any], Callable[[], None]]
"""A stack's processes, one round trip, and how to close its client."""


def raw_stack() -> Stack:
    url = f"tcp://127.0.0.1:{bench_bus.free_port()}"
    procs = [bench_bus.spawn([sys.executable, bench_bus.__file__, "--role", "raw-broker",
                              "--url", url])]
    time.sleep(0.3)  # the raw peers have no readiness signal (as in bench/bus.py)
    procs.append(bench_bus.spawn([sys.executable, bench_bus.__file__, "--role", "raw-echo",
                                  "--url", url]))
    time.sleep(0.3)
    client = bench_bus.RawClient(url)
    body = msgpack.packb(bench_bus.PAYLOAD)
    bench_bus.wait_for_echo(client)
    return procs, lambda: (client.send(body), client.recv()), client.close


def robotlab_stack() -> Stack:
    from robotlab import bus

    url = f"tcp://127.0.0.1:{bench_bus.free_port()}"
    procs = [bench_bus.spawn(bench_bus.broker_argv(url, journal=True)),
             bench_bus.spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo",
                              "--broker", url, "--handler", "bus:echo_handler"])]
    bench_bus.wait_robot(url, "echo")
    client = bus.connect(url, name="bench-client")
    return procs, lambda: client.request("echo", bench_bus.PAYLOAD, timeout=10), client.close


STACKS = {"raw": raw_stack, "robotlab": robotlab_stack}


def measure(kinds: list[str], per: int, blocks: int) -> list[float]:
    """Each stack's p50 (ms) over ``blocks`` turns of ``per`` round trips, the order reversed
    every block."""
    stacks = [STACKS[kind]() for kind in kinds]
    try:
        trips = [stack[1] for stack in stacks]
        for _ in range(300):  # warm up
            for trip in trips:
                trip()
        samples: list[list[float]] = [[] for _ in stacks]
        for block in range(blocks):
            order = range(len(trips)) if block % 2 == 0 else reversed(range(len(trips)))
            for index in order:
                trip, kept = trips[index], samples[index]
                for _ in range(per):
                    start = time.perf_counter()
                    trip()
                    kept.append(time.perf_counter() - start)
        return [statistics.median(kept) * 1000 for kept in samples]
    finally:
        for procs, _, close in stacks:
            close()
            for proc in procs:
                proc.kill()
                proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per", type=int, default=150, help="round trips a turn")
    parser.add_argument("--blocks", type=int, default=30, help="turns of each stack")
    parser.add_argument("--control", help="two stacks of one kind: raw,raw or robotlab,robotlab")
    args = parser.parse_args()
    kinds = (args.control or "raw,robotlab").split(",")
    if len(kinds) != 2 or not set(kinds) <= set(STACKS):
        parser.error("--control takes two of: raw, robotlab")
    load = os.getloadavg()[0]
    first, second = measure(kinds, args.per, args.blocks)
    print(f"| {kinds[0]} p50 (ms) | {kinds[1]} p50 (ms) | ratio | load before |\n"
          f"| ---: | ---: | ---: | ---: |\n"
          f"| {first:.3f} | {second:.3f} | {second / first:.2f}x | {load:.2f} |")


if __name__ == "__main__":
    main()
