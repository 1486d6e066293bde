"""Member memory: what handler-only robotds hold, for 1, 50 and 200 of them on one broker.

Starts a broker (no journal) and N ``robotd --name member-I --handler member_memory:echo``
processes (no robot, no model), waits until every one is in the broker's ``ps`` and has
answered one request, lets them settle, then reads each one's memory with psutil:

- RSS: resident pages, shared ones (the interpreter, libzmq, libssl) counted in full;
- USS: the pages only that process maps (``memory_full_info().uss``), what killing it frees;
- PSS: shared pages split between their mappers; summed over the members, what they take.

The handler is this module's ``echo``, so this module imports nothing at its top that a
robotd would not import anyway: what is measured is robotd, not the benchmark.
The target: one member under 20 MB RSS and 10 MB USS.

A checkout's editable install (``make venv``) is not what a deployment runs: setuptools' import
hook for it is loaded by every process of the venv, and it imports pathlib, which brings
urllib.parse and ipaddress (about 0.7 MB resident). ``--installed`` measures members as a
deployment has them instead: robotlab built into a wheel from the checkout's last commit (in a
copy of it, compiled as ``pip install`` compiles it) and installed into a venv of its own under
build/, its dependencies read from this venv's site-packages; the broker runs from that install
too, as one host's crew does (a member and its broker then share the compiled bus's library).

    python bench/member_memory.py [--members 1,50,200] [--installed] [--write]
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

MB = 1024 * 1024


def echo(message: Any) -> Any:
    """The hosted handler: the content back."""
    return message.content


def joined(url: str, prefix: str) -> int:
    from robotlab import bus

    try:
        with bus.connect(url, name="bench-memory-ps", timeout=2) as probe:
            return sum(1 for row in probe.admin("ps", timeout=10) if row["name"].startswith(prefix))
    except Exception:
        return 0


def start_members(url: str, count: int, prefix: str, python: str) -> list[Any]:
    """Start ``count`` robotds, a few at a time (each start is a second of CPU), until all
    joined."""
    from bus import spawn

    procs = []
    for i in range(count):
        # -P: the current folder (a checkout's robotlab/, when run from one) is not searched
        procs.append(spawn([python, "-P", "-m", "robotlab.robotd", "--name", f"{prefix}{i}",
                            "--broker", url,
                            "--handler", "member_memory:echo", "--log-level", "WARNING"]))
        if i % 10 == 9:
            while joined(url, prefix) < i + 1 - 5:  # keep the start-up queue short on two cores
                time.sleep(0.2)
    deadline = time.monotonic() + 300
    while joined(url, prefix) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {joined(url, prefix)} of {count} members joined {url}")
        time.sleep(0.2)
    return procs


def answer_once(url: str, prefix: str, count: int) -> None:
    """One request to every member: a member that has served is measured, not one still starting."""
    from robotlab import bus

    with bus.connect(url, name="bench-memory") as client:
        for i in range(count):
            client.request(f"{prefix}{i}", "ping", timeout=30)


def measure(procs: list[Any]) -> dict[str, float]:
    import statistics

    import psutil

    rows = [psutil.Process(p.pid).memory_full_info() for p in procs]
    return {"rss": statistics.median(r.rss for r in rows) / MB,
            "uss": statistics.median(r.uss for r in rows) / MB,
            "pss_total": sum(r.pss for r in rows) / MB}


def installed_python() -> str:
    """A venv's python with robotlab installed from a wheel of HEAD, not editable (see the
    module doc); built under build/bench-installed, again on every call."""
    import shutil
    import subprocess
    import sysconfig
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    venv = os.path.join(root, "build", "bench-installed")
    shutil.rmtree(venv, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="rl-wheel-") as scratch:
        source, wheels = os.path.join(scratch, "src"), os.path.join(scratch, "wheels")
        print("building robotlab's wheel from HEAD (the bus compiled: a few minutes)", flush=True)
        subprocess.run(["git", "-C", root, "worktree", "add", "--detach", "-q", source, "HEAD"],
                       check=True)
        try:
            subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                            "--no-build-isolation", "-w", wheels, source], check=True)
        finally:
            subprocess.run(["git", "-C", root, "worktree", "remove", "--force", source],
                           check=True)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        python = os.path.join(venv, "bin", "python")
        subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
                        "--no-deps", *(os.path.join(wheels, w) for w in os.listdir(wheels))],
                       check=True)
    # The dependencies, from this venv: a path line in a .pth puts its site-packages on the
    # path without reading the .pth files there (the editable install's hook among them).
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "dependencies.pth"), "w", encoding="utf-8") as pth:
        pth.write(sysconfig.get_path("purelib") + "\n")
    return python


def run(count: int, member_python: str) -> dict[str, float]:
    """Members from ``member_python``, and their broker from the same install, as one host's
    crew runs: a library both map (the compiled bus) is then shared, not each one's own."""
    from bus import free_port, spawn

    url = f"tcp://127.0.0.1:{free_port()}"
    broker = spawn([member_python, "-P", "-m", "robotlab.cli", "broker", "--bind", url,
                    "--log-level", "WARNING", "--no-journal"])
    procs: list[Any] = []
    try:
        procs = start_members(url, count, "member-", member_python)
        answer_once(url, "member-", count)
        time.sleep(2)  # let the first request's garbage go and the heartbeats settle
        return measure(procs)
    finally:
        for p in [*procs, broker]:
            p.terminate()
        for p in [*procs, broker]:
            p.wait()


def main() -> None:
    import argparse
    import resource

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bus import write_section

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", default="1,50,200",
                        help="comma-separated member counts, one run each")
    parser.add_argument("--label", default="", help="a name for this run's rows (before, after)")
    parser.add_argument("--installed", action="store_true",
                        help="run the members from a wheel install of HEAD (see above)")
    parser.add_argument("--write", action="store_true", help="add the rows to docs/benchmarks.md")
    args = parser.parse_args()
    member_python = installed_python() if args.installed else sys.executable
    counts = [int(n) for n in args.members.split(",")]
    # before: 200 starting members are the load after
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8 * max(counts) + 256)), hard))
    rows = []
    for count in counts:
        figures = run(count, member_python)
        row = (f"| {args.label} | {count} | {figures['rss']:.1f} | {figures['uss']:.1f} | "
               f"{figures['pss_total']:.0f} |")
        print(row, flush=True)
        rows.append(row)
    if args.write:
        installed = " --installed" if args.installed else ""
        note = (f"`python bench/member_memory.py --members {args.members}{installed}`, "
                f"{time.strftime('%Y-%m-%d')}, "
                f"{os.cpu_count()} cores, load average before the run {load}.")
        header = ("| run | members | RSS each (MB, median) | USS each (MB, median) | "
                  "PSS of all members (MB) |\n| --- | ---: | ---: | ---: | ---: |")
        write_section("Member memory: handler-only robotds",
                      f"{note}\n\n{header}\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
