"""What a journaled broker writes to its storage under steady traffic to a pool: plain requests
against ``any`` requests at the same rate, alternated.

A journaled broker, two echo robotds of one name and this client on tcp loopback; the client
sends ``--rate`` requests a second (sequential, paced) for ``--seconds``, and the broker
process's ``write_bytes`` from ``/proc`` (bytes that reached the storage: the journal's
write-ahead log and its checkpoints into the file) and CPU are read over that time. A plain
request answered within the commit interval never touches the file; an ``any`` request leaves
who answered it (the journal's ``answered`` table, docs/durability.md).

    python bench/pool_writes.py [--rate 200] [--seconds 20] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import psutil
from bus import free_port, spawn

from robotlab import bus

KINDS = ("plain", "any")


def wait_pool(client: bus.BusClient, name: str, size: int) -> None:
    deadline = time.monotonic() + 120  # robotds start in seconds, a minute on a loaded machine
    while sum(1 for row in client.admin("ps") if row["name"] == name) < size:
        if time.monotonic() > deadline:
            raise SystemExit(f"the pool of {size} {name} never joined")
        time.sleep(0.05)


def measure(kind: str, rate: float, seconds: float) -> dict[str, float]:
    """One broker and pool, ``kind`` requests at ``rate`` for ``seconds``: per second figures."""
    url = f"tcp://127.0.0.1:{free_port()}"
    journal = os.path.join(tempfile.mkdtemp(prefix="rl-bench-"), "broker.db")
    procs = [spawn([sys.executable, "-m", "robotlab.cli", "broker", "--bind", url,
                    "--log-level", "WARNING", "--journal", journal])]
    procs += [spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo", "--broker", url,
                     "--handler", "bus:echo_handler"]) for _ in range(2)]
    options = {"any": True} if kind == "any" else {}
    try:
        with bus.connect(url, name="bench-load", timeout=5) as client:
            wait_pool(client, "echo", 2)
            broker = psutil.Process(procs[0].pid)
            for _ in range(200):  # both members warm, the journal's tables written once
                client.request("echo", "warm", timeout=10, **options)
            io, cpu = broker.io_counters(), broker.cpu_times()
            start, done = time.monotonic(), 0
            while time.monotonic() - start < seconds:
                client.request("echo", "x" * 100, timeout=10, **options)
                done += 1
                pause = start + done / rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            elapsed = time.monotonic() - start
            io_after, cpu_after = broker.io_counters(), broker.cpu_times()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
    used = cpu_after.user + cpu_after.system - cpu.user - cpu.system
    return {"rate": done / elapsed,
            "kib": (io_after.write_bytes - io.write_bytes) / elapsed / 1024,
            "cpu_us": used / done * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print("| round | requests | req/s | KiB/s to storage | GiB an hour | broker CPU µs/request |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for round_ in range(1, args.rounds + 1):
        for kind in KINDS:
            r = measure(kind, args.rate, args.seconds)
            print(f"| {round_} | {kind} | {r['rate']:,.0f} | {r['kib']:,.1f} | "
                  f"{r['kib'] * 3600 / 2**20:.2f} | {r['cpu_us']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
