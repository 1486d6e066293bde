"""Start-up: how long a person waits for the first line of ``robot-to``, and for ``--help``.

Each figure is the p50 of N fresh processes, measured from the ``exec`` to the event:
- ``python -c pass``, to its exit: the same-run baseline (the interpreter alone);
- ``robot-to "objective"`` to its first line on stderr, with stderr a pipe (a plain line) and
  with stderr a pseudo-terminal (the first bytes of rich's spinner); the process group is killed
  once the line is there, so neither the model client nor the preflight is involved;
- ``robotlab --help`` and ``robotd --help``, to their exit.
Then ``python -X importtime`` of what the robot-to command imports before its first line, the
largest self times first. The target is under 0.5 s for robot-to's first line.

    .venv/bin/python bench/startup.py [--runs 15] [--bin DIR] [--before DIR] [--write]

``--bin`` names the folder of console scripts to measure (default this interpreter's);
``--before`` another one (an older checkout's ``.venv/bin``), measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

OBJECTIVE = "Say hello"


def _first_output(argv: list[str], cwd: str, *, terminal: bool) -> float:
    """Seconds from the exec to the first line on stderr (any bytes, on a terminal)."""
    master = slave = None
    if terminal:
        master, slave = pty.openpty()
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=slave if terminal else subprocess.PIPE, start_new_session=True)
    fd = master if master is not None else process.stderr.fileno()  # type: ignore[union-attr]
    seen = b""
    try:
        while not (seen if terminal else b"\n" in seen):
            ready, _, _ = select.select([fd], [], [], 30)
            if not ready:
                raise SystemExit(f"{argv[0]}: no output within 30 s")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise SystemExit(f"{argv[0]}: exited before its first line")
            seen += chunk
        return time.perf_counter() - started
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for handle in (master, slave):
            if handle is not None:
                os.close(handle)
        if process.stderr is not None:
            process.stderr.close()


def _to_exit(argv: list[str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - started


def import_offenders(python: str, cwd: str, most: int = 8) -> list[tuple[str, float, float]]:
    """(module, self ms, cumulative ms) of the robot-to command's imports, largest self time first.

    Run outside any checkout, so ``-c`` cannot pick up a ``robotlab/`` folder in the working directory.
    """
    done = subprocess.run([python, "-X", "importtime", "-c", "import robotlab.cli.robot_to"],
                          cwd=cwd, capture_output=True, text=True, check=True)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, total, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        rows.append((name, int(own) / 1000, int(total) / 1000))
    return sorted(rows, key=lambda row: -row[1])[:most]


def probes(bin_dir: Path, cwd: str) -> list[tuple[str, Callable[[], float]]]:
    """What is measured, by name: each a function that starts one fresh process and times it."""
    python, robot_to = str(bin_dir / "python"), [str(bin_dir / "robot-to"), OBJECTIVE]
    return [
        ("`python -c pass` (baseline, to exit)", lambda: _to_exit([python, "-c", "pass"], cwd)),
        ("`robot-to ...` first line, stderr a pipe", lambda: _first_output(robot_to, cwd, terminal=False)),
        ("`robot-to ...` first output, stderr a terminal", lambda: _first_output(robot_to, cwd, terminal=True)),
        ("`robotlab --help` (to exit)", lambda: _to_exit([str(bin_dir / "robotlab"), "--help"], cwd)),
        ("`robotd --help` (to exit)", lambda: _to_exit([str(bin_dir / "robotd"), "--help"], cwd)),
    ]


def measure(runs: int, bin_dirs: list[Path]) -> tuple[list[list[tuple[str, float]]], list[tuple[str, float, float]]]:
    """p50 per probe for each folder of ``bin_dirs``, and the first one's import offenders.

    The folders take turns process by process, so a change in the machine's load hits all alike;
    one warm-up round (page cache, .pyc files) is not counted.
    """
    with tempfile.TemporaryDirectory() as cwd:
        tables = [probes(bin_dir, cwd) for bin_dir in bin_dirs]
        times: list[list[list[float]]] = [[[] for _ in table] for table in tables]
        for round_number in range(runs + 1):
            for index in range(len(tables[0])):
                for folder, table in enumerate(tables):
                    seconds = table[index][1]()
                    if round_number:
                        times[folder][index].append(seconds)
        results = [[(name, statistics.median(times[folder][index])) for index, (name, _) in enumerate(table)]
                   for folder, table in enumerate(tables)]
        return results, import_offenders(str(bin_dirs[0] / "python"), cwd)


def report(rows: list[tuple[str, float]], offenders: list[tuple[str, float, float]],
           before: list[tuple[str, float]] | None = None) -> str:
    """The results as markdown tables, each time also as a multiple of its run's baseline."""
    base = rows[0][1]
    head, rule = "| what | p50 | x baseline |", "| --- | --- | --- |"
    if before:
        head, rule = head + " before: p50 | before: x baseline |", rule + " --- | --- |"
    lines = [head, rule]
    for index, (name, seconds) in enumerate(rows):
        line = f"| {name} | {seconds * 1000:.0f} ms | {seconds / base:.1f} |"
        if before:
            line += f" {before[index][1] * 1000:.0f} ms | {before[index][1] / before[0][1]:.1f} |"
        lines.append(line)
    lines += ["", "| module imported before the first line | self ms | cumulative ms |", "| --- | --- | --- |"]
    lines += [f"| `{name}` | {own:.1f} | {total:.1f} |" for name, own, total in offenders]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--bin", type=Path, default=Path(sys.executable).parent,
                        help="the folder of the python and console scripts to measure")
    parser.add_argument("--before", type=Path, help="another such folder (an older checkout's), measured too")
    parser.add_argument("--write", action="store_true", help="record the results in docs/benchmarks.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results, offenders = measure(args.runs, [args.bin, *([args.before] if args.before else [])])
    load = f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    table = report(results[0], offenders, results[1] if args.before else None)
    print(table)
    if args.write:
        from bus import write_section

        compared = " --before OLD/.venv/bin" if args.before else ""
        note = (f"`python bench/startup.py --runs {args.runs}{compared} --write`: p50 of {args.runs} fresh "
                f"processes each (after one warm-up), 2 cores shared with other work ({load}). \"before\" is the "
                "same measurement, in the same run and taking turns process by process, of a checkout without the "
                "lazy `import robotlab`. Target: robot-to's first line under 0.5 s.")
        write_section("Start-up: robot-to's first line, and --help", f"{note}\n\n{table}")


if __name__ == "__main__":
    main()
