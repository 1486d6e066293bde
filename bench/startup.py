"""Start-up: how long a person waits for the first line of ``robot-to``, and for ``--help``.

Each figure is the p50 of N fresh processes, measured from the ``exec`` to the event:
- ``python -c pass``, to its exit: the same-run baseline (the interpreter alone);
- ``robot-to "objective"`` to its first line on stderr, with stderr a pipe (a plain line) and
  with stderr a pseudo-terminal (the first bytes of rich's spinner); the process group is killed
  once the line is there, so neither the model client nor the preflight is involved;
- ``robotlab --help`` and ``robotd --help``, to their exit.
Then ``python -X importtime`` of what the robot-to command imports before its first line, the
largest self times first. The target is under 0.5 s for robot-to's first line.

With ``--robot-runs N`` (default 3; 0 skips them), against a broker process of its own:
- ``robotd --serve`` (a robot with a model on a local server) to its ``ready`` line on stderr;
- a fresh process's first ``Robot.spawn`` until the child answers ``info``, the fork server's
  start included (what a script that spawns pays once), and until the child's first reply
  from a scripted model;
- the same after ``start_fork_server(warm=True)`` (the fork server's warm-up waited for first,
  as every first spawn did before the fork server served during its warm-up).

    .venv/bin/python bench/startup.py [--runs 15] [--robot-runs 3] [--bin DIR] [--before DIR]
    [--write]

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
                               stderr=slave if terminal else subprocess.PIPE,
                               start_new_session=True)
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
    subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def import_offenders(python: str, cwd: str, most: int = 8) -> list[tuple[str, float, float]]:
    """(module, self ms, cumulative ms) of the robot-to command's imports, largest self time first.

    Run outside any checkout, so ``-c`` cannot pick up a ``robotlab/`` folder in the working
    directory.
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
        ("`robot-to ...` first line, stderr a pipe",
         lambda: _first_output(robot_to, cwd, terminal=False)),
        ("`robot-to ...` first output, stderr a terminal",
         lambda: _first_output(robot_to, cwd, terminal=True)),
        ("`robotlab --help` (to exit)",
         lambda: _to_exit([str(bin_dir / "robotlab"), "--help"], cwd)),
        ("`robotd --help` (to exit)", lambda: _to_exit([str(bin_dir / "robotd"), "--help"], cwd)),
    ]


# The robotd's ready line comes before any model call, and a model with an api_base needs no key.
API = "http://127.0.0.1:9/v1"
# A fresh process's first spawn: seconds until the child answers info, then until its first reply
# (from the scripted model). With "warm" as its last argument, it first waits for the fork
# server's warm twin, as every first spawn did while the fork server warmed up before serving.
FIRST_SPAWN = """
import sys, time
from robotlab import Robot
from robotlab.robot.spawn import start_fork_server, stop_fork_server
from robotlab.testing import serve_script
with serve_script([{"content": "hello"}]) as api:
    parent = Robot(name="bench-parent", bus=sys.argv[1], model="openai/scripted", api_base=api)
    started = time.perf_counter()
    if sys.argv[2] == "warm":
        start_fork_server(warm=True)
    child = parent.spawn(name="bench-child")
    child.info()
    answered = time.perf_counter()
    child.run("hi")
    print(answered - started, time.perf_counter() - started)
    child.stop()
    parent.leave_bus()
    stop_fork_server()
"""


def _robotd_ready(bin_dir: Path, broker: str, cwd: str) -> float:
    """Seconds from the exec of ``robotd --serve`` to its ``ready`` line."""
    argv = [str(bin_dir / "robotd"), "--name", "bench-robot", "--broker", broker, "--system-prompt",
            "Answer.", "--model", "openai/scripted", "--api-base", API, "--serve"]
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in process.stderr:  # type: ignore[union-attr]
            if " ready (" in line:
                return time.perf_counter() - started
        raise SystemExit(f"robotd exited before its ready line (exit {process.wait()})")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
        process.stderr.close()  # type: ignore[union-attr]


def _first_spawn(bin_dir: Path, broker: str, cwd: str, how: str) -> list[float]:
    """Seconds a fresh process's first ``spawn`` takes until the child answers, and until its first
    reply."""
    done = subprocess.run([str(bin_dir / "python"), "-c", FIRST_SPAWN, broker, how], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=True)
    return [float(word) for word in done.stdout.split()[-2:]]


def robot_probes(bin_dir: Path, broker: str,
                 cwd: str) -> list[tuple[list[str], Callable[[], list[float]]]]:
    """The slow probes, which need a broker: a robotd's ready line, and a process's first spawn.

    Each probe is one fresh process that gives one figure per name.
    """
    return [
        (["`robotd --serve` to its ready line"], lambda: [_robotd_ready(bin_dir, broker, cwd)]),
        (["a process's first `spawn` until the child answers", "... until the child's first reply"],
         lambda: _first_spawn(bin_dir, broker, cwd, "now")),
        (["a first `spawn` after `start_fork_server(warm=True)`, until the child answers",
          "... until its first reply"],
         lambda: _first_spawn(bin_dir, broker, cwd, "warm")),
    ]


def measure_robots(runs: int, bin_dirs: list[Path]) -> list[list[tuple[str, float]]]:
    """p50 of the robot probes for each folder of ``bin_dirs``, taking turns, on one broker
    process."""
    with tempfile.TemporaryDirectory(prefix="rl-bench-") as cwd:
        broker = f"ipc://{cwd}/broker.sock"
        process = subprocess.Popen([str(bin_dirs[0] / "robotlab"), "broker", "--bind", broker,
                                    "--journal",
                                    f"{cwd}/journal.db"], cwd=cwd, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            while not os.path.exists(f"{cwd}/broker.sock"):
                if process.poll() is not None:
                    raise SystemExit(f"the broker exited ({process.returncode})")
                time.sleep(0.05)
            tables = [robot_probes(bin_dir, broker, cwd) for bin_dir in bin_dirs]
            names = [name for names, _ in tables[0] for name in names]
            times: list[list[list[float]]] = [[[] for _ in names] for _ in tables]
            for _ in range(runs):
                for index in range(len(tables[0])):
                    for folder, table in enumerate(tables):
                        first = sum(len(names) for names, _ in table[:index])
                        for offset, seconds in enumerate(table[index][1]()):
                            times[folder][first + offset].append(seconds)
        finally:
            process.terminate()
            process.wait(30)
    return [[(name, statistics.median(times[folder][index])) for index, name in enumerate(names)]
            for folder in range(len(tables))]


def robot_report(rows: list[tuple[str, float]], before: list[tuple[str, float]] | None) -> str:
    """The robot probes as a markdown table, beside the "before" folder's if measured."""
    lines = ["| what | p50 |" + (" before: p50 |" if before else ""),
             "| --- | --- |" + (" --- |" if before else "")]
    for index, (name, seconds) in enumerate(rows):
        lines.append(f"| {name} | {seconds:.2f} s |" + (f" {before[index][1]:.2f} s |" if before
                                                        else ""))
    return "\n".join(lines)


def measure(runs: int, bin_dirs: list[Path]) -> tuple[list[list[tuple[str, float]]],
                                                      list[tuple[str, float, float]]]:
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
        results = [[(name, statistics.median(times[folder][index]))
                    for index, (name, _) in enumerate(table)]
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
    lines += ["", "| module imported before the first line | self ms | cumulative ms |",
              "| --- | --- | --- |"]
    lines += [f"| `{name}` | {own:.1f} | {total:.1f} |" for name, own, total in offenders]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15,
                        help="runs of the quick probes (0 skips them)")
    parser.add_argument("--bin", type=Path, default=Path(sys.executable).parent,
                        help="the folder of the python and console scripts to measure")
    parser.add_argument("--before", type=Path,
                        help="another such folder (an older checkout's), measured too")
    parser.add_argument("--robot-runs", type=int, default=3,
                        help="runs of the robotd and first-spawn probes")
    parser.add_argument("--write", action="store_true",
                        help="record the results in docs/benchmarks.md")
    args = parser.parse_args()
    bin_dirs = [args.bin, *([args.before] if args.before else [])]
    compared = " --before OLD/.venv/bin" if args.before else ""
    if args.runs:
        load_before = os.getloadavg()[0]
        results, offenders = measure(args.runs, bin_dirs)
        load = f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        table = report(results[0], offenders, results[1] if args.before else None)
        print(table)
        if args.write:
            write(QUICK_TITLE, "--runs", args.runs, compared, QUICK_NOTE.format(load=load), table)
    if args.robot_runs:
        load_before = os.getloadavg()[0]
        robots = measure_robots(args.robot_runs, bin_dirs)
        load = f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        robots_table = robot_report(robots[0], robots[1] if args.before else None)
        print(f"\n{robots_table}")
        if args.write:
            write(ROBOT_TITLE, "--robot-runs", args.robot_runs, compared,
                  ROBOT_NOTE.format(load=load), robots_table)


QUICK_TITLE = "Start-up: robot-to's first line, and --help"
QUICK_NOTE = (" (after one warm-up), 2 cores shared with other work ({load}). \"before\" is the "
              "same measurement, in the same run and taking turns process by process, of a "
              "checkout without the lazy `import robotlab`. Target: robot-to's first line under "
              "0.5 s.")
ROBOT_TITLE = "Start-up: a robotd's ready line, and a process's first spawn"
ROBOT_NOTE = (", taking turns, on one broker process, 2 cores shared with other work ({load}). The "
              "robotd hosts a robot with `--serve` and a model on a local server; the first spawn "
              "is timed inside a fresh process, from `spawn()` to the child's answer to `info` "
              "(the fork server's start included) and to its first reply from a scripted model; "
              "then again after waiting for the fork server's warm twin.")


def write(title: str, option: str, runs: int, compared: str, note: str, table: str) -> None:
    """Record one table in its section of docs/benchmarks.md, after the command that made it."""
    from bus import write_section

    command = (f"`python bench/startup.py {option} {runs}{compared} --write`: p50 of {runs} fresh "
               "processes each")
    write_section(title, f"{command}{note}\n\n{table}")


if __name__ == "__main__":
    main()
