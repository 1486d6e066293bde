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

Needs ``perf`` (Debian's ``linux-perf``) and the right to sample every CPU (root, or
``kernel.perf_event_paranoid`` at most 0); without it, only the context switches are read.
Not run by CI::

    python bench/bus_where.py [--seconds 3] [--rounds 2] [--frequency 4000]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

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


def measurer(frequency: int, sample: bool, scratch: Path) -> bus_cpu.Measure:
    """A ``measure`` for bus_cpu's stacks: switches and (with ``sample``) perf's samples."""

    def measure(processes: dict[str, psutil.Process], pipeline: bus_cpu.Pipeline,
                seconds: float) -> dict[str, object]:
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


def report(raws: list[dict[str, object]], ours: list[dict[str, object]]) -> str:
    rates = [statistics.median(float(run["rate"]) for run in runs)  # type: ignore[arg-type]
             for runs in (raws, ours)]
    lines = [f"throughput, 8 outstanding: raw {rates[0]:,.0f}/s, robotlab {rates[1]:,.0f}/s "
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
    args = parser.parse_args()
    sample = can_sample()
    if not sample:
        print("perf cannot sample every CPU here (apt-get install linux-perf, and run as root): "
              "context switches only\n")
    raws, ours = [], []
    with tempfile.TemporaryDirectory(prefix="rl-where-") as scratch:
        measure = measurer(args.frequency, sample, Path(scratch))
        for _ in range(args.rounds):
            raws.append(bus_cpu.raw(args.seconds, measure))
            ours.append(bus_cpu.robotlab(args.seconds, measure))
    print(f"medians of {args.rounds} interleaved rounds\n")
    print(report(raws, ours))


if __name__ == "__main__":
    main()
