"""System calls per bus round trip in each process, robotlab against raw pyzmq, in the same run.

Both stacks are ``bench/bus.py``'s: robotlab's ``robotlab broker`` + ``robotd --handler`` echo +
``BusClient.request`` in this process, and the raw ROUTER forwarder, DEALER echo and DEALER
client. Once the client has warmed up, a counter is attached to each of the three processes
(all their threads, libzmq's I/O thread included), the client makes N sequential round trips,
and each count divided by N is the figure.

Two counters: ``perf`` (the default) counts the kernel's syscall tracepoints and leaves the
processes at native speed; ``strace -c -f`` stops each thread at every call, which slows a
round trip several times over, so calls that depend on time grow under it (libzmq processes
its mailbox on a send only when about a millisecond has passed since the last; a seated
caller's leave timer fires when a round trip outlasts it). ``--per-thread`` (perf only) shows
which thread makes them. Needs perf (Debian's ``linux-perf``) or strace, and the right to
attach (root, or ``kernel.perf_event_paranoid`` / ptrace scope allowing it); not run by CI::

    python bench/bus_syscalls.py [--n 2000] [--tool perf|strace] [--per-thread] [--write]

Run it from the root of the checkout to measure: the broker and the echo start as ``python -m``,
which puts the working directory first on ``sys.path``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus as bench_bus  # noqa: E402  (bench/bus.py: both stacks' peers and the docs writer)

ROLES = ("broker", "echo", "client")
CALLS = ("poll", "getpid", "futex", "read", "write", "epoll_wait", "epoll_ctl", "sendto",
         "recvfrom", "pwrite64", "timerfd_settime")
TITLE = "Bus: system calls per round trip"
WARM_UP = 300

Counts = dict[str, float]


@contextmanager
def robotlab_stack() -> Iterator[tuple[list[int], Callable[[], object]]]:
    """The robotlab peers: pids of broker, echo and this client, and one round trip."""
    from robotlab import bus

    url = f"tcp://127.0.0.1:{bench_bus.free_port()}"
    procs = [bench_bus.spawn(bench_bus.broker_argv(url, journal=True))]
    procs.append(bench_bus.spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo",
                                  "--broker", url, "--handler", "bus:echo_handler"]))
    try:
        bench_bus.wait_robot(url, "echo")
        with bus.connect(url, name="bench-client") as client:
            yield [procs[0].pid, procs[1].pid, os.getpid()], \
                lambda: client.request("echo", bench_bus.PAYLOAD, timeout=10)
    finally:
        for p in procs:
            p.terminate()
            p.wait()


@contextmanager
def raw_stack() -> Iterator[tuple[list[int], Callable[[], object]]]:
    """The raw pyzmq peers, as ``bench/bus.py`` runs them."""
    url = f"tcp://127.0.0.1:{bench_bus.free_port()}"
    script = str(Path(bench_bus.__file__))
    procs = [bench_bus.spawn([sys.executable, script, "--role", "raw-broker", "--url", url])]
    time.sleep(0.3)  # a benchmark, not a test: the raw peers have no readiness signal
    procs.append(bench_bus.spawn([sys.executable, script, "--role", "raw-echo", "--url", url]))
    client = bench_bus.RawClient(url)
    body = msgpack.packb(bench_bus.PAYLOAD)

    def round_trip() -> None:
        client.send(body)
        client.recv()

    try:
        bench_bus.wait_for_echo(client)
        yield [procs[0].pid, procs[1].pid, os.getpid()], round_trip
    finally:
        client.close()
        for p in procs:
            p.kill()
            p.wait()


def counter(tool: str, pid: int, out: Path, per_thread: bool) -> subprocess.Popen:
    """Start counting ``pid``'s system calls into ``out``; stopped with SIGINT."""
    if tool == "strace":
        argv = ["strace", "-c", "-f", "-o", str(out), "-p", str(pid)]
    else:
        events = ",".join(f"syscalls:sys_enter_{name}" for name in CALLS) + ",context-switches"
        argv = ["perf", "stat", "-x,", "-e", events, "-o", str(out), "-p", str(pid),
                *(["--per-thread"] if per_thread else [])]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def parse(tool: str, text: str, n: int, per_thread: bool = False) -> dict[str, Counts]:
    """Counts per round trip, by thread (``all`` when not per thread) and call."""
    found: dict[str, Counts] = {}
    for line in text.splitlines():
        if tool == "strace":  # % time, seconds, usecs/call, calls, [errors], syscall
            parts = line.split()
            if len(parts) >= 5 and parts[3].isdigit() and parts[-1] != "total":
                found.setdefault("all", {})[parts[-1]] = int(parts[3]) / n
            continue
        parts = line.split(",")  # perf -x,: [thread,] count, unit, event, ...
        thread, parts = (parts[0], parts[1:]) if per_thread else ("all", parts)
        if len(parts) > 2 and parts[0].strip().isdigit():
            call = parts[2].replace("syscalls:sys_enter_", "")
            found.setdefault(thread, {})[call] = int(parts[0]) / n
    return found


def measure(stack: str, n: int, tool: str, per_thread: bool, scratch: Path) -> dict[str,
                                                                                    dict[str,
                                                                                         Counts]]:
    """Counts per round trip for each role of ``stack``."""
    with (robotlab_stack() if stack == "robotlab" else raw_stack()) as (pids, round_trip):
        for _ in range(WARM_UP):
            round_trip()
        outs = [scratch / f"{stack}-{role}.txt" for role in ROLES]
        counters = [counter(tool, pid, out, per_thread) for pid,
                    out in zip(pids, outs, strict=True)]
        time.sleep(1.5)  # attaching takes a moment; counting idle time adds only heartbeats
        for _ in range(n):
            round_trip()
        for proc in counters:
            proc.send_signal(signal.SIGINT)
            proc.wait()
        return {role: parse(tool, out.read_text(), n, per_thread) for role,
                out in zip(ROLES, outs, strict=True)}


def table(raw: dict[str, dict[str, Counts]], ours: dict[str, dict[str, Counts]]) -> str:
    """One row per process and call that either stack makes at least 0.05 times a round trip."""
    lines = ["| process | call | raw pyzmq | robotlab |", "| --- | --- | ---: | ---: |"]
    names = [*CALLS, "context-switches"]
    for role in ROLES:
        a, b = _total(raw[role]), _total(ours[role])
        for name in sorted(set(a) | set(b),
                           key=lambda c: names.index(c) if c in names else len(names)):
            if max(a.get(name, 0), b.get(name, 0)) >= 0.05:
                lines.append(f"| {role} | {name} | {a.get(name, 0):.2f} | {b.get(name, 0):.2f} |")
    return "\n".join(lines)


def _total(threads: dict[str, Counts]) -> Counts:
    total: Counts = {}
    for counts in threads.values():
        for name, value in counts.items():
            total[name] = total.get(name, 0) + value
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="counted round trips")
    parser.add_argument("--tool", choices=["perf", "strace"], default="perf")
    parser.add_argument("--per-thread", action="store_true",
                        help="perf only: print each thread's counts too")
    parser.add_argument("--write", action="store_true",
                        help="record the table in docs/benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rl-syscalls-") as scratch:
        raw = measure("raw", args.n, args.tool, args.per_thread, Path(scratch))
        ours = measure("robotlab", args.n, args.tool, args.per_thread, Path(scratch))
    text = table(raw, ours)
    print(text)
    if args.per_thread:
        for stack, found in (("raw", raw), ("robotlab", ours)):
            for role in ROLES:
                for thread, counts in sorted(found[role].items()):
                    print(stack, role, thread, {k: round(v, 2) for k,
                                                v in counts.items() if v >= 0.01})
    if args.write:
        head = (f"`python bench/bus_syscalls.py --n {args.n} --tool {args.tool} --write`, "
                f"{time.strftime('%Y-%m-%d')}: "
                "calls per sequential round trip, every thread of each process (libzmq's I/O "
                "thread included).")
        bench_bus.write_section(TITLE, head + "\n\n" + text)


if __name__ == "__main__":
    main()
