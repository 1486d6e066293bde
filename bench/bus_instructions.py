"""Instructions per bus round trip in each process, counted with callgrind: robotlab vs raw pyzmq.

Wall-clock numbers on a shared 2-core machine move by tens of percent between runs; the
instructions a process executes for the same work do not. For each stack (robotlab: ``robotlab
broker`` + ``robotd --handler`` echo + ``BusClient.request``; raw: the ROUTER forwarder, DEALER
echo and DEALER client of ``bench/bus.py``) and each of its three processes, one run starts that
process under ``valgrind --tool=callgrind`` and the other two natively. Once the client has warmed
up, the measured process's counters are dumped (``callgrind_control -d``: start-up and imports
end up in that first part), the client makes N sequential round trips, and the counters are
dumped again: the second part divided by N is the figure. No subtraction run is needed and
shutdown is never counted.

Needs valgrind (Debian's ``valgrind`` package); not run by CI. Each of the six runs spends a
minute or two importing under valgrind::

    python bench/bus_instructions.py [--n 2000] [--no-journal] [--write] [--label "what changed"]
    python bench/bus_instructions.py --n 50 --only robotlab --roles echo --body-bytes 4194304

``--body-bytes`` sends that many random bytes instead of the small map, to count what a large
body costs each process (a copy of 4 MiB is about a million instructions, so copies show as
whole millions). ``--write`` replaces the table in docs/benchmarks.md; ``--label`` also records the
totals as one
row (replaced if the label is there already) of the step-by-step table beside it.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus as bench_bus  # noqa: E402  (bench/bus.py: the raw peers and the docs writer)

ROLES = ("broker", "echo", "client")
STACKS = ("raw", "robotlab")
WARM_UP = 200
WARM_UP_LARGE = 20
STEPS_TITLE = "Bus: instructions per round trip, step by step"


# -- the client, run as a child process and driven over stdin/stdout ------------------------------


def client_role(stack: str, url: str, n: int, body_bytes: int = 0) -> None:
    """The client of ``stack``, driven by :func:`serve`. The payload is ``bench/bus.py``'s
    small map, or ``body_bytes`` random bytes when given."""
    payload = os.urandom(body_bytes) if body_bytes else bench_bus.PAYLOAD
    round_trip = _raw_client(url, payload) if stack == "raw" else _robotlab_client(url, payload)
    # large bodies: minutes a round under valgrind
    serve(round_trip, n, WARM_UP_LARGE if body_bytes else WARM_UP)


def serve(round_trip: Callable[[int], object], n: int, warm_up: int = WARM_UP) -> None:
    """Warm up, say ``ready``; on ``go`` make ``n`` round trips and say ``done``; stop on
    ``exit``."""
    for i in range(warm_up):
        round_trip(i)
    print("ready", flush=True)
    while True:
        # A timed wait, not a blocking read: callgrind takes its dump requests between syscalls.
        if not select.select([sys.stdin], [], [], 0.05)[0]:
            continue
        line = sys.stdin.readline().strip()
        if line == "go":
            for i in range(n):
                round_trip(i)
            print("done", flush=True)
        elif line in ("exit", ""):
            return


def _raw_client(url: str, payload: object) -> Callable[[int], object]:
    import msgpack

    client = bench_bus.RawClient(url)
    bench_bus.wait_for_echo(client)
    body = msgpack.packb(payload)

    def round_trip(i: int) -> None:
        client.send(body)
        client.recv()

    return round_trip


def _robotlab_client(url: str, payload: object) -> Callable[[int], object]:
    from robotlab import bus
    from robotlab.errors import BusError

    client = bus.connect(url, name="bench-client", timeout=600)
    deadline = time.monotonic() + 600
    while True:  # the echo may still be importing under valgrind
        try:
            client.request("echo", payload, timeout=30)
            break
        except BusError:
            if time.monotonic() > deadline:
                raise SystemExit("the echo never answered") from None
            time.sleep(0.2)
    return lambda i: client.request("echo", payload, timeout=60)


# -- the harness ---------------------------------------------------------------------------------


def argv_of(stack: str, role: str, url: str, n: int, journal: bool,
            body_bytes: int = 0) -> list[str]:
    """How to start one process of a stack, natively."""
    me = [sys.executable, __file__, "--url", url]
    if role == "client":
        return [*me, "--role", "client", "--stack", stack, "--n", str(n), "--body-bytes",
                str(body_bytes)]
    if stack == "raw":
        return [sys.executable, bench_bus.__file__, "--role", f"raw-{role}", "--url", url,
                "--wake-ms", "50"]
    if role == "broker":
        # slow under valgrind, not silent
        return [*bench_bus.broker_argv(url, journal), "--liveness", "30"]
    return [sys.executable, "-m", "robotlab.robotd", "--name", "echo", "--broker", url, "--handler",
            "bus:echo_handler"]


def measure(stack: str, role: str, n: int, journal: bool, scratch: Path,
            body_bytes: int = 0) -> float:
    """Instructions per round trip of ``role`` in ``stack``."""
    url = f"tcp://127.0.0.1:{bench_bus.free_port()}"
    out = scratch / f"{stack}-{role}.out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(bench_bus.__file__).parent),
                                                        os.environ.get("PYTHONPATH", "")])}
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        for each in ROLES:
            argv = argv_of(stack, each, url, n, journal, body_bytes)
            if each == role:
                argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv]
            pipes = ({"stdin": subprocess.PIPE, "stdout": subprocess.PIPE} if each == "client"
                     else {"stdout": subprocess.DEVNULL})
            procs[each] = subprocess.Popen(  # type: ignore[call-overload]
                argv, env=env, stderr=subprocess.DEVNULL, text=True, **pipes)
        client = procs["client"]
        assert client.stdin is not None and client.stdout is not None
        _expect(client.stdout, "ready")
        _dump(procs[role].pid)  # part 1: start-up, imports and warm-up
        _say(client.stdin, "go")
        _expect(client.stdout, "done")
        _dump(procs[role].pid)  # part 2: the n round trips
        _say(client.stdin, "exit")
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(120)
    return _total(Path(f"{out}.2")) / n


def _say(pipe: IO[str], line: str) -> None:
    pipe.write(line + "\n")
    pipe.flush()


def _expect(pipe: IO[str], word: str) -> None:
    line = pipe.readline().strip()
    if line != word:
        raise SystemExit(f"the client said {line!r} where it should say {word!r}")


def _dump(pid: int) -> None:
    subprocess.run(["callgrind_control", "--dump", str(pid)], check=True, capture_output=True,
                   timeout=300)


def _total(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise SystemExit(f"{path} has no totals line: did callgrind write it?")


def table(counts: dict[tuple[str, str], float]) -> str:
    """The robotlab vs raw table, one row a process and a total."""
    lines = ["| process | raw pyzmq | robotlab | ratio |", "| --- | ---: | ---: | ---: |"]
    for role in (*ROLES, "total"):
        raw = sum(counts["raw", r] for r in ROLES) if role == "total" else counts["raw", role]
        ours = sum(counts["robotlab", r] for r in ROLES) if role == "total" else counts["robotlab",
                                                                                        role]
        lines.append(f"| {role} | {raw / 1000:,.0f}k | {ours / 1000:,.0f}k | {ours / raw:.2f}x |")
    return "\n".join(lines)


def record_step(label: str, counts: dict[tuple[str, str], float]) -> None:
    """Add (or replace) the row of ``label`` in the step-by-step table of docs/benchmarks.md."""
    path = bench_bus.ROOT / "docs" / "benchmarks.md"
    text = path.read_text()
    head = ("Each row is one run of `python bench/bus_instructions.py --write --label ...` after "
            "the "
            "change it names (robotlab's instructions per round trip, in thousands; raw pyzmq's in "
            "the same run).\n\n"
            "| step | broker | echo | client | total | raw total | ratio |\n| --- | ---: | ---: | "
            "---: | ---: | ---: | ---: |")
    start = text.find(f"## {STEPS_TITLE}\n")
    rows = [] if start == -1 else [line for line in text[start:].split("\n## ")[0].splitlines()
                                   if line.startswith("| ")
                                   and not line.startswith(("| step", "| ---"))
                                   and not line.startswith(f"| {label} |")]
    ours = [counts.get(("robotlab", r)) for r in ROLES]
    raw = [counts.get(("raw", r)) for r in ROLES]
    total = sum(c for c in ours if c is not None) if None not in ours else None
    raw_total = sum(c for c in raw if c is not None) if None not in raw else None
    cells = [*ours, total, raw_total]
    ratio = f"{total / raw_total:.2f}x" if total and raw_total else "-"
    shown = " | ".join("-" if c is None else f"{c / 1000:,.0f}" for c in cells)
    rows.append(f"| {label} | {shown} | {ratio} |")
    bench_bus.write_section(STEPS_TITLE, head + "\n" + "\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["client"])
    parser.add_argument("--stack", choices=STACKS, default="robotlab")
    parser.add_argument("--url")
    parser.add_argument("--n", type=int, default=2000, help="round trips counted")
    parser.add_argument("--no-journal", action="store_true",
                        help="run the robotlab broker with --no-journal")
    parser.add_argument("--only", choices=STACKS,
                        help="measure one stack only (with --label: its row of the step table)")
    parser.add_argument("--roles", default=",".join(ROLES),
                        help="the processes to measure, comma-separated")
    parser.add_argument("--body-bytes", type=int, default=0,
                        help="send this many random bytes instead of the small map (large bodies: "
                             "4194304 is 4 MiB)")
    parser.add_argument("--write", action="store_true",
                        help="record the table in docs/benchmarks.md")
    parser.add_argument("--label", help="with --write: also record the totals as this step's row")
    args = parser.parse_args()
    if args.role == "client":
        return client_role(args.stack, args.url, args.n, args.body_bytes)
    if args.write and args.body_bytes:
        parser.error("--write records the small-message figures: measure --body-bytes without it")
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    scratch = Path(tempfile.mkdtemp(prefix="rl-callgrind-"))
    counts: dict[tuple[str, str], float] = {}
    for stack in [args.only] if args.only else STACKS:
        for role in args.roles.split(","):
            counts[stack, role] = measure(stack, role, args.n, not args.no_journal, scratch,
                                          args.body_bytes)
            print(f"{stack:9} {role:7} {counts[stack, role] / 1000:9,.1f}k instructions per round "
                  "trip", flush=True)
    if len(counts) < len(STACKS) * len(ROLES):
        if args.write and args.label:
            record_step(args.label, counts)
        return
    result = table(counts)
    print(result)
    if args.write:
        journal = "with `--no-journal`" if args.no_journal else "with its journal"
        note = ("`python bench/bus_instructions.py --n "
                f"{args.n}{' --no-journal' if args.no_journal else ''} --write`, "
                f"{time.strftime('%Y-%m-%d')}: instructions per sequential round trip (callgrind, "
                "Ir) in each "
                f"process, the robotlab broker {journal}; counted over {args.n} round trips after "
                "a warm-up, "
                "start-up and shutdown excluded (see the script's docstring).")
        bench_bus.write_section("Bus: instructions per round trip (callgrind)",
                                f"{note}\n\n{result}")
        if args.label:
            record_step(args.label, counts)


if __name__ == "__main__":
    main()
