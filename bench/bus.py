"""Bus benchmark: robotlab request/reply through a real broker vs a raw pyzmq broker, same run.

Both sides run three processes on tcp loopback: a broker, an echo peer and this client.

- robotlab: ``robotlab broker`` + ``robotd --handler`` (echo) + ``BusClient.request``;
- baseline: a ROUTER-ROUTER forwarder and a DEALER echo in plain pyzmq, no acks, no tracking.

Measures round-trip p50/p99 (one request at a time) and throughput with 8 requests
outstanding, prints the ratios and, with ``--write``, records them in docs/benchmarks.md.
The robotlab broker runs twice in each round, with its journal (the default of
``robotlab broker``) and with ``--no-journal``, to price the journal.

``--tracing`` measures the price of tracing instead: robotlab with no exporter configured,
twice per round (the two give the run's noise floor), and with every process exporting its
spans (the ``jsonl`` exporter), interleaved; plus, timed alone, the few operations tracing
adds to a round trip's path when it is off. ``--keys`` measures the price of CURVE keys
instead (bench/keys_cost.py): robotlab keyless and with keys for every process, interleaved.
Last, in the same run, ``Robot.ask`` against ``BusClient.request`` (bench/robot_ask.py).

    python bench/bus.py [--n 3000] [--seconds 3] [--write] [--tracing | --keys]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import zmq

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD = {"task": "echo", "n": 0, "text": "x" * 64}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the raw pyzmq baseline (run as child processes) -------------------------------------------


def raw_broker(url: str, wake_ms: int = -1) -> None:
    """ROUTER that forwards [to, body] from one peer to another as [from, body].

    ``wake_ms`` > 0 wakes an idle receive that often (callgrind answers dump requests only
    between system calls: see bench/bus_instructions.py); a busy one never waits.
    """
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.RCVTIMEO, wake_ms)
    sock.bind(url)
    while True:
        try:
            sender, to, body = sock.recv_multipart()
        except zmq.Again:
            continue
        sock.send_multipart([to, sender, body])


def raw_echo(url: str, wake_ms: int = -1) -> None:
    """DEALER named 'echo' that sends every body back to its sender (``wake_ms`` as above)."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.ROUTING_ID, b"echo")
    sock.setsockopt(zmq.RCVTIMEO, wake_ms)
    sock.connect(url)
    sock.send_multipart([b"echo", b"hello"])  # registers the route; echoes itself once
    while True:
        try:
            sender, body = sock.recv_multipart()
        except zmq.Again:
            continue
        if sender != b"echo":
            sock.send_multipart([sender, body])


class RawClient:
    """The baseline's client side."""

    def __init__(self, url: str) -> None:
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.connect(url)

    def send(self, body: bytes) -> None:
        self.sock.send_multipart([b"echo", body])

    def recv(self) -> bytes:
        return self.sock.recv_multipart()[1]

    def close(self) -> None:
        self.sock.close(linger=0)


# -- measurement --------------------------------------------------------------------------------


def latency(round_trip: Callable[[int], None], n: int) -> tuple[float, float]:
    """p50 and p99 of ``n`` sequential round trips, in milliseconds."""
    for i in range(200):
        round_trip(i)  # warm up
    samples = []
    for i in range(n):
        start = time.perf_counter()
        round_trip(i)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def wait_for_echo(client: RawClient) -> None:
    """Probe until the echo answers: the raw broker drops what it cannot route yet, silently."""
    while True:
        client.send(b"probe")
        if client.sock.poll(200):
            break
    while client.sock.poll(300):  # answers to earlier probes that came late
        client.recv()


def raw_numbers(url: str, n: int, seconds: float) -> dict[str, float]:
    client = RawClient(url)
    body = msgpack.packb(PAYLOAD)
    wait_for_echo(client)

    def round_trip(i: int) -> None:
        client.send(body)
        client.recv()

    p50, p99 = latency(round_trip, n)
    done, elapsed = raw_pipeline(client, body, seconds)
    client.close()
    return {"p50": p50, "p99": p99, "rate": done / elapsed}


def raw_pipeline(client: RawClient, body: bytes, seconds: float) -> tuple[int, float]:
    """Round trips done with 8 outstanding for ``seconds``, and the seconds it took."""
    done, start = 0, time.perf_counter()
    for _ in range(8):
        client.send(body)
    while time.perf_counter() - start < seconds:
        client.recv()
        done += 1
        client.send(body)
    elapsed = time.perf_counter() - start
    for _ in range(8):
        client.recv()
    return done, elapsed


def robotlab_numbers(url: str, n: int, seconds: float) -> dict[str, float]:
    from robotlab import bus

    with bus.connect(url, name="bench-client") as client:
        p50, p99 = latency(lambda i: client.request("echo", PAYLOAD, timeout=10), n)
        done, elapsed = robotlab_pipeline(client, seconds)
    return {"p50": p50, "p99": p99, "rate": done / elapsed}


def robotlab_pipeline(client: Any, seconds: float) -> tuple[int, float]:
    """:func:`raw_pipeline` with a BusClient: ``send_request`` ahead, then ``tracker.reply()``."""
    window = [client.send_request("echo", PAYLOAD) for _ in range(8)]
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        window.pop(0).reply(10)
        done += 1
        window.append(client.send_request("echo", PAYLOAD))
    elapsed = time.perf_counter() - start
    for tracker in window:
        tracker.reply(10)
    return done, elapsed


def spawn(argv: list[str], extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    path = os.pathsep.join(filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, **(extra_env or {})}
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_robot(url: str, name: str) -> None:
    from robotlab import bus

    deadline = time.monotonic() + 120  # a robotd starts in seconds, or a minute on a loaded machine
    while time.monotonic() < deadline:
        try:
            with bus.connect(url, name="bench-probe", timeout=1) as probe:
                if any(r["name"] == name for r in probe.admin("ps")):
                    return
        except Exception:
            pass
        time.sleep(0.05)
    raise SystemExit(f"{name} never joined {url}")


def run_raw(n: int, seconds: float) -> dict[str, float]:
    url = f"tcp://127.0.0.1:{free_port()}"
    procs = [spawn([sys.executable, __file__, "--role", "raw-broker", "--url", url])]
    time.sleep(0.3)  # a benchmark, not a test: the raw peers have no readiness signal
    procs.append(spawn([sys.executable, __file__, "--role", "raw-echo", "--url", url]))
    time.sleep(0.3)
    try:
        return raw_numbers(url, n, seconds)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def broker_argv(url: str, journal: bool) -> list[str]:
    """``robotlab broker`` on ``url``, journaling to a fresh temporary file or not at all."""
    where = (["--journal", os.path.join(tempfile.mkdtemp(prefix="rl-bench-"), "broker.db")]
             if journal else ["--no-journal"])
    return [sys.executable, "-m", "robotlab.cli", "broker", "--bind", url, "--log-level", "WARNING",
            *where]


def run_robotlab(n: int, seconds: float, journal: bool = True,
                 env: dict[str, str] | None = None) -> dict[str, float]:
    url = f"tcp://127.0.0.1:{free_port()}"
    procs = [spawn(broker_argv(url, journal), env)]
    procs.append(spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo", "--broker", url,
                        "--handler", "bus:echo_handler"], env))
    try:
        wait_robot(url, "echo")
        return robotlab_numbers(url, n, seconds)
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def echo_handler(message):  # hosted by robotd in the robotlab run
    return message.content


# What robotlab.bus.inline does, without importing robotlab into the raw peers: the echo is
# quick and never waits on the bus, so the receiver runs it on its I/O thread.
setattr(echo_handler, "robotlab_inline", True)  # noqa: B010


def alternate(rounds: int, *runs: Callable[[], dict[str, float]]) -> list[dict[str, float]]:
    """Run each measurement ``rounds`` times, interleaved (A B A B ...), and keep the medians.

    Interleaving spreads the machine's background noise over both sides of a ratio.
    """
    results: list[list[dict[str, float]]] = [[] for _ in runs]
    for _ in range(rounds):
        for run, bucket in zip(runs, results, strict=True):
            bucket.append(run())
    return [{key: statistics.median(r[key] for r in bucket) for key in bucket[0]}
            for bucket in results]


def report(raw: dict[str, float], ours: dict[str, float]) -> str:
    rows = [
        ("round trip p50 (ms)", raw["p50"], ours["p50"], ours["p50"] / raw["p50"]),
        ("round trip p99 (ms)", raw["p99"], ours["p99"], ours["p99"] / raw["p99"]),
        ("throughput, 8 outstanding (req/s)", raw["rate"], ours["rate"],
         ours["rate"] / raw["rate"]),
    ]
    lines = ["| measure | raw pyzmq broker | robotlab | ratio |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {name} | {a:,.3f} | {b:,.3f} | {r:.2f}x |" for name, a, b, r in rows]
    return "\n".join(lines)


def cost_report(without: dict[str, float], with_it: dict[str, float],
                labels: tuple[str, str]) -> str:
    """What a feature costs, run without it and with it: p50 and p99 grow, throughput falls."""
    rows = [
        ("round trip p50 (ms)", without["p50"], with_it["p50"],
         with_it["p50"] / without["p50"] - 1),
        ("round trip p99 (ms)", without["p99"], with_it["p99"],
         with_it["p99"] / without["p99"] - 1),
        ("throughput, 8 outstanding (req/s)", without["rate"], with_it["rate"],
         1 - with_it["rate"] / without["rate"]),
    ]
    lines = [f"| measure | {labels[0]} | {labels[1]} | cost |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {name} | {a:,.3f} | {b:,.3f} | {cost:+.1%} |" for name, a, b, cost in rows]
    return "\n".join(lines)


def write_section(title: str, body: str) -> None:
    """Replace (or add) one ``## title`` section of docs/benchmarks.md."""
    path = ROOT / "docs" / "benchmarks.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start = text.find(f"## {title}\n")
    section = f"## {title}\n\n{body.strip()}\n\n"
    if start == -1:
        text = text.rstrip() + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[end + 1:] if end != -1 else "")
    path.write_text(text.rstrip() + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["raw-broker", "raw-echo"])
    parser.add_argument("--url")
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds; medians are reported")
    parser.add_argument("--write", action="store_true",
                        help="record the results in docs/benchmarks.md")
    parser.add_argument("--wake-ms", type=int, default=-1,
                        help="raw peers: wake an idle receive this often")
    parser.add_argument("--tracing", action="store_true",
                        help="price tracing (off, and on) instead")
    parser.add_argument("--keys", action="store_true",
                        help="price CURVE keys (keyless, and keyed) instead")
    args = parser.parse_args()
    if args.tracing:
        from tracing_cost import main as tracing_main

        return tracing_main(args, run_robotlab, alternate, write_section)
    if args.keys:
        from keys_cost import main as keys_main

        return keys_main(args, run_robotlab, alternate, write_section, cost_report)
    if args.role == "raw-broker":
        return raw_broker(args.url, args.wake_ms)
    if args.role == "raw-echo":
        return raw_echo(args.url, args.wake_ms)
    raw, ours, memory_only = alternate(args.rounds, lambda: run_raw(args.n, args.seconds),
                                       lambda: run_robotlab(args.n, args.seconds),
                                       lambda: run_robotlab(args.n, args.seconds, journal=False))
    table = report(raw, ours)
    print(table)
    journal_table = cost_report(memory_only, ours, ("--no-journal", "journal"))
    print(journal_table)
    if args.write:
        write_section("Broker journal cost",
                      f"Same run and command as the bus round trip above: the robotlab broker "
                      "with `--no-journal` and with its journal (SQLite, WAL; a commit at the end "
                      "of a turn that "
                      f"has a receipt or admin reply waiting, else at most every 10 ms), "
                      f"medians of {args.rounds} interleaved rounds. Target: the journal costs "
                      "under 20% of "
                      f"round-trip p50 and of throughput.\n\n{journal_table}")
    if args.write:
        note = (f"`python bench/bus.py --n {args.n} --seconds {args.seconds:g} --rounds "
                f"{args.rounds} --write`, "
                f"{time.strftime('%Y-%m-%d')}, medians of {args.rounds} interleaved rounds, "
                f"{os.cpu_count()} cores. Targets (DESIGN.md section 7): p50 within 1.5x of the "
                "raw broker "
                "(never worse than 2x), throughput at least half of it.")
        write_section("Bus round trip (robot to robot through the broker)", f"{note}\n\n{table}")
    # Robot.ask in the same run, interleaved with BusClient.request on a broker of its own
    from robot_ask import measure, table

    ask_table = table(measure(args.n, args.rounds))
    print(ask_table)
    if args.write:
        write_section("Robot.ask round trip (a robot in another process)",
                      "`Robot.ask` to a robot whose inline `respond_to_tasks` echoes, and "
                      "`BusClient.request` to the echo robotd, in turns on one broker, after the "
                      f"bus numbers above (same command; bench/robot_ask.py).\n\n{ask_table}")


if __name__ == "__main__":
    main()
