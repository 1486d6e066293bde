"""Bus growth benchmark: fan-out to 16 instances and 4 MiB bodies, robotlab vs raw pyzmq, same run.

- Fan-out: one sender keeps 8 messages outstanding to a name with 16 instances (in one receiver
  process). robotlab: each copy is delivered, acked, and the sender's tracker settles on the
  broker's receipt once all 16 acked; raw: a ROUTER that copies each message to its 16 joined
  DEALERs, each of which sends an ack straight back. Reports copies delivered per second.
- Large bodies: request/reply p50 of a 4 MiB body against a 64 KiB one, through each broker to
  an echo. A 64x larger body costs what moving 64x the bytes costs; an extra copy at any hop
  would show as robotlab's 4 MiB ratio to raw growing past its 64 KiB one.

    python bench/bus_growth.py [--seconds 5] [--rounds 3] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus as bench_bus  # noqa: E402  (bench/bus.py: the raw echo, process starting, the docs writer)

INSTANCES = 16
WINDOW = 8
SIZES = {"64 KiB": 64 * 1024, "4 MiB": 4 * 1024 * 1024}


# -- raw fan-out peers (child processes) -------------------------------------------------------


def raw_fan_broker(url: str) -> None:
    """ROUTER: [b"join"] joins the fan; [b"count"] answers how many joined; [b"fan", body] goes
    to every member; [to, body] to one."""
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.bind(url)
    fan: list[bytes] = []
    while True:
        sender, to, body = sock.recv_multipart()
        if to == b"join":
            fan.append(sender)
        elif to == b"count":
            sock.send_multipart([sender, b"broker", str(len(fan)).encode()])
        elif to == b"fan":
            for member in fan:
                sock.send_multipart([member, sender, body])
        else:
            sock.send_multipart([to, sender, body])


def raw_fan_members(url: str) -> None:
    """16 DEALERs in one process; each acks every message straight back to its sender."""
    ctx = zmq.Context.instance()
    poller = zmq.Poller()
    for _ in range(INSTANCES):
        sock = ctx.socket(zmq.DEALER)
        sock.connect(url)
        sock.send_multipart([b"join", b""])
        poller.register(sock, zmq.POLLIN)
    while True:
        for sock, _ in poller.poll():
            sender, _body = sock.recv_multipart()
            sock.send_multipart([sender, b"ack"])


def robotlab_fan_members(url: str) -> None:
    """16 BusClients named 'fan' in one process, each acking every message as its handler
    returns."""
    import threading

    from robotlab import bus

    clients = [bus.connect(url, name="fan", role="robot", timeout=30) for _ in range(INSTANCES)]
    for client in clients:
        client.on_message(lambda message: None, inline=True)
    threading.Event().wait()


# -- measurement ----------------------------------------------------------------------------------


def raw_fan_rate(url: str, seconds: float) -> float:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.RCVTIMEO, 30_000)  # a lost copy fails the run instead of hanging it
    sock.connect(url)
    deadline = time.monotonic() + 60
    while True:  # every member joined: a copy sent before that would never be acked
        sock.send_multipart([b"count", b""])
        if int(sock.recv_multipart()[1]) == INSTANCES:
            break
        if time.monotonic() > deadline:
            raise SystemExit("the 16 raw fan members never joined")
        time.sleep(0.1)
    body = b"x" * 100
    sent = acks = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        while sent - acks // INSTANCES < WINDOW:
            sock.send_multipart([b"fan", body])
            sent += 1
        sock.recv_multipart()
        acks += 1
    rate = acks / (time.perf_counter() - start)
    sock.close(linger=0)
    return rate


def robotlab_fan_rate(url: str, seconds: float) -> float:
    from robotlab import bus

    with bus.connect(url, name="bench-fan-sender") as client:
        window = [client.send("fan", bench_bus.PAYLOAD) for _ in range(WINDOW)]
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            tracker = window.pop(0).wait(30)
            done += len(tracker.instances)
            window.append(client.send("fan", bench_bus.PAYLOAD))
        rate = done / (time.perf_counter() - start)
        for tracker in window:
            tracker.wait(30)
    return rate


def run_fan(stack: str, seconds: float) -> float:
    """Copies delivered per second to 16 instances, one stack."""
    url = f"tcp://127.0.0.1:{bench_bus.free_port()}"
    if stack == "raw":
        procs = [bench_bus.spawn([sys.executable, __file__, "--role", "raw-fan-broker", "--url",
                                  url])]
        procs.append(bench_bus.spawn([sys.executable, __file__, "--role", "raw-fan-members",
                                      "--url", url]))
    else:
        procs = [bench_bus.spawn(bench_bus.broker_argv(url, journal=True))]
        procs.append(bench_bus.spawn([sys.executable, __file__, "--role", "robotlab-fan-members",
                                      "--url", url]))
    try:
        if stack == "robotlab":
            wait_members(url)
        return raw_fan_rate(url, seconds) if stack == "raw" else robotlab_fan_rate(url, seconds)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def wait_members(url: str) -> None:
    from robotlab import bus

    deadline = time.monotonic() + 60
    # a loaded machine starts a broker slowly
    with bus.connect(url, name="bench-probe", timeout=120) as probe:
        while sum(r["name"] == "fan" for r in probe.admin("ps")) < INSTANCES:
            if time.monotonic() > deadline:
                raise SystemExit("the 16 fan members never joined")
            time.sleep(0.1)


def size_p50(stack: str, size: int, n: int) -> float:
    """Request/reply p50 (ms) of a ``size``-byte body through ``stack`` to an echo."""
    url = f"tcp://127.0.0.1:{bench_bus.free_port()}"
    body = os.urandom(size)
    if stack == "raw":
        procs = [bench_bus.spawn([sys.executable, bench_bus.__file__, "--role", "raw-broker",
                                  "--url", url])]
        procs.append(bench_bus.spawn([sys.executable, bench_bus.__file__, "--role", "raw-echo",
                                      "--url", url]))
    else:
        procs = [bench_bus.spawn(bench_bus.broker_argv(url, journal=True))]
        procs.append(bench_bus.spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo",
                                      "--broker", url, "--handler", "bus:echo_handler"]))
    try:
        return _p50(stack, url, body, n)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _p50(stack: str, url: str, body: bytes, n: int) -> float:
    if stack == "raw":
        client = bench_bus.RawClient(url)
        bench_bus.wait_for_echo(client)
        p50 = _timed(lambda: (client.send(body), client.recv()), n)
        client.close()
        return p50
    from robotlab import bus

    bench_bus.wait_robot(url, "echo")
    with bus.connect(url, name="bench-large") as client:
        return _timed(lambda: client.request("echo", body, timeout=30), n)


def _timed(round_trip: Callable[[], object], n: int) -> float:
    for _ in range(5):
        round_trip()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        round_trip()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["raw-fan-broker", "raw-fan-members",
                                           "robotlab-fan-members"])
    parser.add_argument("--url")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=100, help="round trips per body size")
    parser.add_argument("--write", action="store_true",
                        help="record the results in docs/benchmarks.md")
    args = parser.parse_args()
    roles = {"raw-fan-broker": raw_fan_broker, "raw-fan-members": raw_fan_members,
             "robotlab-fan-members": robotlab_fan_members}
    if args.role:
        return roles[args.role](args.url)
    fan = {stack: statistics.median(run_fan(stack, args.seconds) for _ in range(args.rounds))
           for stack in ("raw", "robotlab")}
    sizes = {(stack, name): size_p50(stack, size, args.n) for name,
             size in SIZES.items() for stack in ("raw", "robotlab")}
    lines = ["| measure | raw pyzmq | robotlab | ratio |", "| --- | ---: | ---: | ---: |",
             f"| fan-out to {INSTANCES} instances, copies delivered/s | {fan['raw']:,.0f} | "
             f"{fan['robotlab']:,.0f} | "
             f"{fan['robotlab'] / fan['raw']:.2f}x |"]
    lines += [f"| {name} request/reply p50 (ms) | {sizes['raw', name]:,.2f} | "
              f"{sizes['robotlab', name]:,.2f} | "
              f"{sizes['robotlab', name] / sizes['raw', name]:.2f}x |" for name in SIZES]
    table = "\n".join(lines)
    print(table)
    if args.write:
        note = (f"`python bench/bus_growth.py --seconds {args.seconds:g} --rounds {args.rounds} "
                f"--n {args.n} --write`, "
                f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores (see the script's docstring "
                "for what each row does). "
                "Target: fan-out at least half of raw's copies per second.")
        bench_bus.write_section("Bus growth: fan-out and large bodies", f"{note}\n\n{table}")


if __name__ == "__main__":
    main()
