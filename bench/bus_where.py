"""Where a pipelined round trip's CPU goes: by thread, by kind of code, and in context switches.

``bench/bus_cpu.py`` reads how much CPU each process spends a round trip in ``bench/bus.py``'s
pipelined phase. This script says where, for raw pyzmq and robotlab in the same run: it samples
every CPU with ``perf record -e cpu-clock`` over that phase and sorts the samples by process, by
thread (the application's own threads, or libzmq's I/O thread) and by the code they landed in:
the kernel, CPython itself, the compiled bus (mypyc), msgpack, libzmq, pyzmq, libc. It also
counts each thread's context switches a round trip (voluntary: it waited; involuntary: it was
preempted), from ``/proc``. A sample is the 1/frequency seconds before it, so a figure is the
µs of CPU a round trip costs there; samples land where interrupts come back on, so the kernel's
share includes what a wake-up or a context switch costs a virtual machine.

``--sequential`` does the same over sequential round trips (one request at a time, what
``bench/bus.py``'s p50 measures) instead of the pipelined phase: where a round trip's latency
goes, since each of its steps waits on the one before.

``--waits`` records the scheduler over sequential round trips (``perf sched``) and reports, for
each kind of thread how long it waited for a CPU once woken (``perf sched timehist``'s
scheduling delay) and how long it then ran: a thread still busy when the next one in the chain
is woken makes that one wait, on a machine with fewer cores than busy threads.

``--hops`` takes a sequential round trip apart instead: where its time goes between the threads
that hand a message on. perf records when each thread of the three processes enters ``write``
(an application thread handing a frame to its I/O thread, or an I/O thread handing one it read
to its application thread: libzmq's mailbox is an eventfd) or ``sendto`` (an I/O thread putting
frames on TCP), and each gap between two such moments is filed under the two hand-offs it lies
between: ``echo I/O -> echo app`` is the time the echo's application thread took from being
handed a DELIVER to handing over its reply, its wake-up included. The tracepoint fires on every
system call, so every gap is longer than natively, a process's the more the more system calls it
makes: compare the rows of one run, not with ``bench/bus.py``.

Needs ``perf`` (Debian's ``linux-perf``) and the right to sample every CPU (root, or
``kernel.perf_event_paranoid`` at most 0); without it, only the context switches are read.
Not run by CI::

    python bench/bus_where.py [--seconds 3] [--rounds 2] [--frequency 4000]
                              [--sequential | --waits | --hops]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus_cpu  # noqa: E402  (bench/bus_cpu.py: the same stacks and pipelined phase)

IO_THREAD = "ZMQbg/IO"
"""How libzmq names its I/O threads (the rest of a process's threads are the application's)."""
CODE_KINDS = (("kernel", "kernel"), ("libpython", "CPython"), ("_native__mypyc", "compiled bus"),
              ("msgpack", "msgpack"), ("libzmq", "libzmq"), ("_zmq", "pyzmq"),
              ("libc.so", "libc"))
Counts = collections.defaultdict[tuple[str, ...], float]


def thread_kind(comm: str) -> str:
    return "I/O" if comm.startswith(IO_THREAD) else "app"


def code_kind(dso: str) -> str:
    return next((kind for part, kind in CODE_KINDS if part in dso), "other")


def switches(pid: int) -> dict[int, tuple[str, int, int]]:
    """Each thread of ``pid``: its name and its voluntary and involuntary context switches."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines()
        except OSError:  # the thread ended between the listing and the read
            continue
        fields = dict(line.split(":\t", 1) for line in status if ":\t" in line)
        threads[int(tid)] = (fields["Name"].strip(), int(fields["voluntary_ctxt_switches"]),
                             int(fields["nonvoluntary_ctxt_switches"]))
    return threads


def can_sample() -> bool:
    if shutil.which("perf") is None:
        return False
    probe = subprocess.run(["perf", "record", "-a", "-e", "cpu-clock", "-o", os.devnull, "--",
                            "true"], capture_output=True)
    return probe.returncode == 0


def samples(data: str, roles: dict[int, str], frequency: int, round_trips: float) -> Counts:
    """µs a round trip by (process, thread kind, code kind), from a ``perf record`` file."""
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,ip,dso"],
                            capture_output=True, text=True, check=True).stdout
    counts: Counts = collections.defaultdict(float)
    each = 1e6 / frequency / round_trips
    for line in script.splitlines():
        # "COMM PID IP (DSO)": the name may hold spaces, the other three never do
        words = line.split()
        if len(words) < 4 or not words[-3].isdigit() or int(words[-3]) not in roles:
            continue
        comm = " ".join(words[:-3])
        counts[roles[int(words[-3])], thread_kind(comm), code_kind(words[-1])] += each
    return counts


HANDOFFS = "raw_syscalls:sys_enter", "id == 1 || id == 44"
"""The tracepoint and filter of ``--hops``: entering write (1) or sendto (44) on x86-64."""


def hop_gaps(data: str, roles: dict[int, str]) -> dict[tuple[str, str], list[float]]:
    """The µs between consecutive hand-offs of the three processes, by (from, to) hand-off."""
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,time,trace"],
                            capture_output=True, text=True, check=True).stdout
    moments = []
    for line in script.splitlines():
        # a line holds the thread's name, its pid, the seconds, then ": NR <call> (<args>)"
        head, _, trace = line.partition(": NR ")
        words = head.split()
        if not trace or len(words) < 3 or not words[-2].isdigit() or int(words[-2]) not in roles:
            continue
        thread = thread_kind(" ".join(words[:-2]))
        what = "TCP" if trace.split()[0] == "44" else thread
        moments.append((float(words[-1]), f"{roles[int(words[-2])]} {what}"))
    moments.sort()
    gaps: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for (start, one), (end, other) in zip(moments, moments[1:], strict=False):
        gaps[one, other].append((end - start) * 1e6)
    return gaps


def hop_measure(scratch: Path) -> bus_cpu.Measure:
    """A ``measure`` that traces the hand-offs of sequential round trips (``--hops``)."""

    def measure(stack: bus_cpu.Stack, seconds: float) -> dict[str, object]:
        for _ in range(200):  # warm-up
            stack.round_trip()
        data = str(scratch / "hops.data")
        event, condition = HANDOFFS
        perf = subprocess.Popen(["perf", "record", "-a", "-e", event, "--filter", condition,
                                 "-o", data, "--", "sleep", str(seconds)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while perf.poll() is None:
            stack.round_trip()
        roles = {p.pid: name for name, p in stack.processes.items()}
        return {"gaps": hop_gaps(data, roles)}

    return measure


TIMEHIST_LINE = re.compile(r"^\s*[\d.]+\s+\[\d+\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+[\d.]+\s+"
                           r"([\d.]+)\s+([\d.]+)")
"""A line of ``perf sched timehist``: time, cpu, name[tid/pid] (or name[pid]), then the wait,
the scheduling delay and the run time in milliseconds."""


Waits = dict[tuple[str, str], tuple[float, float]]


def sched_waits(data: str, roles: dict[int, str]) -> Waits:
    """By (process, thread kind): mean µs waited for a CPU once woken, and mean µs run then."""
    timehist = subprocess.run(["perf", "sched", "timehist", "-i", data], capture_output=True,
                              text=True, check=True).stdout
    runs: dict[tuple[str, str], list[tuple[float, float]]] = collections.defaultdict(list)
    for line in timehist.splitlines():
        match = TIMEHIST_LINE.match(line)
        if match is None:
            continue
        name, tid, pid, delay, ran = match.groups()
        role = roles.get(int(pid or tid))
        if role is not None:
            runs[role, thread_kind(name)].append((float(delay) * 1000, float(ran) * 1000))
    return {key: (statistics.fmean(d for d, _ in each), statistics.fmean(r for _, r in each))
            for key, each in runs.items()}


def waits_measure(scratch: Path) -> bus_cpu.Measure:
    """A ``measure`` that records the scheduler over sequential round trips (``--waits``)."""

    def measure(stack: bus_cpu.Stack, seconds: float) -> dict[str, object]:
        for _ in range(200):  # warm-up
            stack.round_trip()
        data = str(scratch / "sched.data")
        perf = subprocess.Popen(["perf", "sched", "record", "-o", data, "--", "sleep",
                                 str(seconds)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        done = 0
        while perf.poll() is None:
            stack.round_trip()
            done += 1
        roles = {p.pid: name for name, p in stack.processes.items()}
        return {"waits": sched_waits(data, roles), "rate": done / seconds}

    return measure


def waits_report(raws: list[dict[str, object]], ours: list[dict[str, object]]) -> str:
    """Per kind of thread: mean µs waited for a CPU once woken, and run then; medians."""
    lines = ["Scheduler, one request at a time (perf sched, medians of the rounds): mean µs a "
             "thread waited for a CPU once woken, and mean µs it then ran", "",
             "| process | thread | raw waited | robotlab waited | raw ran | robotlab ran |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for process in ("client", "broker", "echo"):
        for kind in ("app", "I/O"):
            waited, ran = ([statistics.median(run["waits"].get((process, kind), (0.0, 0.0))[i]  # type: ignore[attr-defined]
                                              for run in runs) for runs in (raws, ours)]
                           for i in range(2))
            lines.append(f"| {process} | {kind} | {waited[0]:.1f} | {waited[1]:.1f} | "
                         f"{ran[0]:.1f} | {ran[1]:.1f} |")
    return "\n".join(lines)


ROUND_TRIP = ("client app", "client TCP", "broker I/O", "broker app", "broker TCP", "echo I/O",
              "echo app", "echo TCP", "broker I/O", "broker app", "broker TCP", "client I/O",
              "client app")
"""The hand-offs of one sequential round trip, in order (the client's last is the next one's
first)."""


def hops_report(raws: list[dict[str, object]], ours: list[dict[str, object]]) -> str:
    """The median gap of each hand-off pair, in the order of a round trip, raw against robotlab."""
    steps = list(zip(ROUND_TRIP, ROUND_TRIP[1:], strict=False))
    medians = []
    for runs in (raws, ours):
        gaps: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
        for run in runs:
            for step, each in run["gaps"].items():  # type: ignore[attr-defined]
                gaps[step] += each
        medians.append({step: statistics.median(gaps[step]) if gaps[step] else float("nan")
                        for step in steps})
    lines = ["µs between hand-offs of a sequential round trip, medians (traced: longer than "
             "natively)", "", "| from | to | raw | robotlab | difference |",
             "| --- | --- | ---: | ---: | ---: |"]
    for step in dict.fromkeys(steps):  # each once, in the order of a round trip
        raw, ours_ = medians[0][step], medians[1][step]
        lines.append(f"| {step[0]} | {step[1]} | {raw:.1f} | {ours_:.1f} | {ours_ - raw:+.1f} |")
    totals = [sum(each[step] for step in steps) for each in medians]
    lines += ["", f"along one round trip: raw {totals[0]:.0f} µs, robotlab {totals[1]:.0f} µs"]
    return "\n".join(lines)


def one_at_a_time(round_trip: Callable[[], None]) -> bus_cpu.Pipeline:
    """A phase of sequential round trips for the seconds given: how many, and the seconds taken."""

    def phase(seconds: float) -> tuple[int, float]:
        done, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            round_trip()
            done += 1
        return done, elapsed

    return phase


def measurer(frequency: int, sample: bool, scratch: Path, sequential: bool) -> bus_cpu.Measure:
    """A ``measure`` for bus_cpu's stacks: switches and (with ``sample``) perf's samples, over
    the pipelined phase or (``sequential``) one request at a time."""

    def measure(stack: bus_cpu.Stack, seconds: float) -> dict[str, object]:
        processes = stack.processes
        pipeline = one_at_a_time(stack.round_trip) if sequential else stack.pipeline
        roles = {p.pid: name for name, p in processes.items()}
        before = {name: switches(p.pid) for name, p in processes.items()}
        data = str(scratch / "perf.data")
        perf = subprocess.Popen(["perf", "record", "-a", "-e", "cpu-clock", "-F", str(frequency),
                                 "-o", data, "--", "sleep", str(seconds)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) \
            if sample else None
        done, elapsed = pipeline(seconds)
        if perf is not None:
            perf.wait()
        result: dict[str, object] = {"rate": done / elapsed}
        switched: Counts = collections.defaultdict(float)
        for name, process in processes.items():
            for tid, (comm, voluntary, involuntary) in switches(process.pid).items():
                _, was_voluntary, was_involuntary = before[name].get(tid, (comm, 0, 0))
                kind = thread_kind(comm)
                switched[name, kind, "voluntary"] += (voluntary - was_voluntary) / done
                switched[name, kind, "involuntary"] += (involuntary - was_involuntary) / done
        result["switches"] = switched
        if perf is not None:
            result["samples"] = samples(data, roles, frequency, done / elapsed * seconds)
        return result

    return measure


def median_of(runs: list[dict[str, object]], part: str, key: tuple[str, ...]) -> float:
    return statistics.median(run[part].get(key, 0.0) for run in runs)  # type: ignore[attr-defined]


def keys_of(runs: list[dict[str, object]], part: str, size: int) -> list[tuple[str, ...]]:
    return sorted({key[:size] for run in runs for key in run.get(part, {})})  # type: ignore[attr-defined]


def report(raws: list[dict[str, object]], ours: list[dict[str, object]], sequential: bool) -> str:
    rates = [statistics.median(float(run["rate"]) for run in runs)  # type: ignore[arg-type]
             for runs in (raws, ours)]
    lines = [f"one at a time: raw {1e6 / rates[0]:.0f} µs, robotlab {1e6 / rates[1]:.0f} µs a "
             f"round trip ({rates[0] / rates[1]:.2f}x)" if sequential else
             f"throughput, 8 outstanding: raw {rates[0]:,.0f}/s, robotlab {rates[1]:,.0f}/s "
             f"({rates[1] / rates[0]:.2f}x)", ""]
    if "samples" in ours[0]:
        lines += ["µs of CPU a round trip, by thread and kind of code (perf samples):", "",
                  "| process | thread | code | raw | robotlab | difference |",
                  "| --- | --- | --- | ---: | ---: | ---: |"]
        totals: collections.defaultdict[str, float] = collections.defaultdict(float)
        for key in keys_of(raws + ours, "samples", 3):
            cells = [median_of(runs, "samples", key) for runs in (raws, ours)]
            totals[key[2]] += cells[1] - cells[0]
            if max(cells) >= 0.5:
                lines.append(f"| {' | '.join(key)} | {cells[0]:.1f} | {cells[1]:.1f} | "
                             f"{cells[1] - cells[0]:+.1f} |")
        largest_first = sorted(totals.items(), key=lambda item: -item[1])
        lines += ["", "robotlab's difference by kind of code, all processes: "
                  + ", ".join(f"{kind} {diff:+.1f}" for kind, diff in largest_first), ""]
    lines += ["Context switches a round trip (voluntary + involuntary):", "",
              "| process | thread | raw | robotlab |", "| --- | --- | ---: | ---: |"]
    for process, kind in keys_of(raws + ours, "switches", 2):
        pairs = [[median_of(runs, "switches", (process, kind, why))
                  for why in ("voluntary", "involuntary")] for runs in (raws, ours)]
        lines.append(f"| {process} | {kind} | " + " | ".join(
            f"{v + i:.2f} ({v:.2f} + {i:.2f})" for v, i in pairs) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--frequency", type=int, default=4000, help="perf samples a second")
    parser.add_argument("--sequential", action="store_true",
                        help="sample sequential round trips instead of the pipelined phase")
    parser.add_argument("--waits", action="store_true",
                        help="how long each thread waits for a CPU once woken (perf sched)")
    parser.add_argument("--hops", action="store_true",
                        help="take a sequential round trip apart, hand-off by hand-off")
    args = parser.parse_args()
    sample = can_sample()
    if (args.hops or args.waits) and not sample:
        raise SystemExit(f"--{'hops' if args.hops else 'waits'} needs perf's tracepoints: "
                         "apt-get install linux-perf, as root")
    if not sample:
        print("perf cannot sample every CPU here (apt-get install linux-perf, and run as root): "
              "context switches only\n")
    raws, ours = [], []
    with tempfile.TemporaryDirectory(prefix="rl-where-") as scratch:
        measure = (hop_measure(Path(scratch)) if args.hops else
                   waits_measure(Path(scratch)) if args.waits else
                   measurer(args.frequency, sample, Path(scratch), args.sequential))
        for _ in range(args.rounds):
            raws.append(bus_cpu.raw(args.seconds, measure))
            ours.append(bus_cpu.robotlab(args.seconds, measure))
    print(f"{args.rounds} interleaved rounds\n")
    print(hops_report(raws, ours) if args.hops else waits_report(raws, ours) if args.waits else
          report(raws, ours, args.sequential))


if __name__ == "__main__":
    main()
