"""Presence benchmark: a broker holding 1,000 connected robots with heartbeats.

One process opens N raw DEALER connections that say HELLO and then heartbeat like robots;
meanwhile a real client measures request/reply to an echo robotd. The broker keeps up when
no robot is expired for silence and the round trip stays close to its idle value.

    python bench/presence.py [--robots 1000] [--seconds 10] [--write]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import threading
import time
from pathlib import Path

import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bus import free_port, spawn, wait_robot, write_section  # noqa: E402

from robotlab import bus  # noqa: E402
from robotlab.bus.wire import protocol  # noqa: E402
from robotlab.bus.wire.protocol import Command  # noqa: E402


def crowd(url: str, robots: int, stop: threading.Event, heartbeat: float) -> None:
    """N robots on raw sockets: HELLO, then a heartbeat every interval; drain what comes."""
    ctx = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, robots + 64)
    socks = []
    for i in range(robots):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(url)
        s.send_multipart(protocol.encode(Command.HELLO,
                                         {"name": f"crowd-{i}", "instance": f"c{i}",
                                          "role": "robot"}))
        socks.append(s)
    poller = zmq.Poller()
    for s in socks:
        poller.register(s, zmq.POLLIN)
    beat = protocol.encode(Command.HEARTBEAT)
    next_beat = time.monotonic() + heartbeat
    while not stop.is_set():
        for s, _ in poller.poll(50):
            while s.poll(0):
                s.recv_multipart()
        if time.monotonic() >= next_beat:
            for s in socks:
                s.send_multipart(beat)
            next_beat += heartbeat
    for s in socks:
        s.close()
    ctx.term()


def round_trips(client: bus.BusClient, seconds: float) -> list[float]:
    samples, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.perf_counter()
        client.request("echo", "ping", timeout=10)
        samples.append((time.perf_counter() - start) * 1000)
        time.sleep(0.02)
    return sorted(samples)


def count_crowd(client: bus.BusClient) -> int:
    return sum(1 for row in client.admin("ps", timeout=10) if row["name"].startswith("crowd-"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.robots + 256)), hard))
    url = f"tcp://127.0.0.1:{free_port()}"
    procs = [spawn([sys.executable, "-m", "robotlab.cli", "broker", "--bind", url, "--log-level",
                    "WARNING", "--no-journal"]),
             spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo", "--broker", url,
                    "--handler", "bus:echo_handler"])]
    stop = threading.Event()
    try:
        wait_robot(url, "echo")
        with bus.connect(url, name="bench-presence") as client:
            idle = round_trips(client, 2)
            thread = threading.Thread(target=crowd, args=(url, args.robots, stop, 1.0), daemon=True)
            thread.start()
            deadline = time.monotonic() + 60
            while count_crowd(client) < args.robots and time.monotonic() < deadline:
                time.sleep(0.2)
            joined = time.monotonic()
            loaded = round_trips(client, args.seconds)
            live = count_crowd(client)
            expired = client.admin("stats").get("peers_expired", 0)
        stop.set()
        thread.join(10)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
    rows = [
        "| measure | value |", "| --- | ---: |",
        f"| robots connected with 1 s heartbeats | {args.robots:,} |",
        f"| still live after {args.seconds:g} s | {live:,} |",
        f"| expired for silence | {expired} |",
        f"| request/reply p50 idle (ms) | {statistics.median(idle):.3f} |",
        f"| request/reply p50 with the crowd (ms) | {statistics.median(loaded):.3f} |",
        f"| request/reply p99 with the crowd (ms) | {loaded[int(len(loaded) * 0.99) - 1]:.3f} |",
    ]
    table = "\n".join(rows)
    print(table)
    print(f"(crowd joined in {joined - (deadline - 60):.1f} s)")
    if args.write:
        note = (f"`python bench/presence.py --robots {args.robots} --seconds {args.seconds:g} "
                "--write`, "
                f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; the crowd, the broker, one "
                "echo robotd "
                "and the client share the machine.")
        write_section("Presence: 1,000 robots with heartbeats", f"{note}\n\n{table}")


if __name__ == "__main__":
    main()
