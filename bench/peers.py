"""Peers benchmark: robotlab and a raw pyzmq broker beside AutoGen (gRPC) and Ray, same run.

One echo round trip each way, measured the same way for all four (``bus.latency``: p50/p99 of
sequential round trips after 200 warm-up ones; throughput with 8 requests outstanding):

- robotlab and raw pyzmq: bench/bus.py's own runners (broker + echo + client, tcp loopback);
- AutoGen: autogen-core's gRPC worker runtime host in its own process, an echo agent in a
  worker runtime in another, and the caller in a third worker runtime (``send_message``);
- Ray: a local Ray cluster, an echo actor and a caller actor that times its calls to it.

AutoGen and Ray are installed on first use into ``.peers-venv`` (git-ignored, beside ``.venv``),
never into the project's environment; a peer that does not install is skipped with the reason.
Rounds are interleaved (robotlab, raw, AutoGen, Ray, robotlab, ...) and medians reported.

    python bench/peers.py [--rounds 3] [--n 2000] [--seconds 3] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import venv
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE.parent / ".peers-venv"
# Pinned so a rerun measures the same code; bump deliberately.
# Ray's caller imports bench/bus.py (its latency loop and payload), hence pyzmq and msgpack.
REQUIREMENTS = {"autogen": ["autogen-core==0.7.5", "autogen-ext[grpc]==0.7.5"],
                "ray": ["ray==2.60.0", "pyzmq==27.3.0", "msgpack==1.2.4"]}
PROBES = {"autogen": "import autogen_ext.runtimes.grpc", "ray": "import ray, zmq, msgpack"}
SCRIPTS = {"autogen": HERE / "peers_autogen.py", "ray": HERE / "peers_ray.py"}
PAYLOAD_TEXT = "x" * 64
WINDOW = 8


# -- the peers' environment ----------------------------------------------------------------------


def peers_python() -> Path:
    return PEERS_VENV / "bin" / "python"


def install_peers() -> dict[str, str]:
    """Create the peers' venv if needed and install each peer; return ``{peer: why skipped}``."""
    if not peers_python().exists():
        try:
            venv.create(PEERS_VENV, with_pip=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            return {peer: f"cannot create {PEERS_VENV}: {exc}" for peer in REQUIREMENTS}
    skipped = {}
    for peer, requirements in REQUIREMENTS.items():
        if _importable(peer):
            continue
        pip = subprocess.run([str(peers_python()), "-m", "pip", "install", "--quiet",
                              *requirements],
                             capture_output=True, text=True)
        if pip.returncode != 0 or not _importable(peer):
            last = (pip.stderr.strip().splitlines() or ["no output"])[-1]
            skipped[peer] = f"pip install {' '.join(requirements)} failed: {last}"
    return skipped


def _importable(peer: str) -> bool:
    return subprocess.run([str(peers_python()), "-c", PROBES[peer]],
                          capture_output=True).returncode == 0


def run_peer(peer: str, n: int, seconds: float) -> dict[str, float]:
    """Measure one peer in the peers' venv; its numbers come back as one JSON line."""
    argv = [str(peers_python()), str(SCRIPTS[peer]), "--n", str(n), "--seconds", str(seconds)]
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(
            f"{peer} run failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])


# -- shared measurement (imported in the peers' venv too: stdlib only at the top) ----------------


async def async_numbers(call: Callable[[], Awaitable[object]], n: int,
                        seconds: float) -> dict[str, float]:
    """bench/bus.py's measures for an asyncio caller: p50/p99 after 200 warm-up round trips, and
    throughput with ``WINDOW`` outstanding."""
    for _ in range(200):
        await call()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    window = [asyncio.ensure_future(call()) for _ in range(WINDOW)]
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        await window.pop(0)
        done += 1
        window.append(asyncio.ensure_future(call()))
    rate = done / (time.perf_counter() - start)
    await asyncio.gather(*window)
    return {"p50": statistics.median(samples), "p99": samples[int(len(samples) * 0.99) - 1],
            "rate": rate}


# -- the run -------------------------------------------------------------------------------------


COLUMNS = ("robotlab", "raw pyzmq broker", "AutoGen gRPC", "Ray actors")


def measure(rounds: int, n: int, seconds: float,
            skipped: dict[str, str]) -> dict[str, dict[str, float]]:
    """Every side ``rounds`` times, interleaved; the medians per side."""
    import bus

    runs: dict[str, Callable[[], dict[str, float]]] = {
        "robotlab": lambda: bus.run_robotlab(n, seconds),
        "raw pyzmq broker": lambda: bus.run_raw(n, seconds),
        "AutoGen gRPC": lambda: run_peer("autogen", n, seconds),
        "Ray actors": lambda: run_peer("ray", n, seconds),
    }
    peer_of = {"AutoGen gRPC": "autogen", "Ray actors": "ray"}
    names = [name for name in COLUMNS if peer_of.get(name) not in skipped]
    medians = bus.alternate(rounds, *(runs[name] for name in names))
    return dict(zip(names, medians, strict=True))


def report(results: dict[str, dict[str, float]], skipped: dict[str, str]) -> str:
    names = list(results)
    raw = results["raw pyzmq broker"]
    lines = ["| measure | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    for key, label, unit in (("p50", "round trip p50", "µs"), ("p99", "round trip p99", "µs"),
                             ("rate", f"throughput, {WINDOW} outstanding", "/s")):
        cells = []
        for name in names:
            value = results[name][key] * (1000 if unit == "µs" else 1)
            ratio = ("" if name == "raw pyzmq broker"
                     else f" ({results[name][key] / raw[key]:.2f}x raw)")
            cells.append(f"{value:,.0f} {unit}{ratio}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [f"\n{peer} skipped: {why}" for peer, why in skipped.items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds; medians are reported")
    parser.add_argument("--n", type=int, default=2000, help="sequential round trips for p50/p99")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of the throughput run")
    parser.add_argument("--write", action="store_true",
                        help="record the table in docs/benchmarks.md")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    load = os.getloadavg()[0]
    skipped = install_peers()
    table = report(measure(args.rounds, args.n, args.seconds, skipped), skipped)
    print(table)
    if args.write:
        from bus import write_section

        note = (f"`python bench/peers.py --rounds {args.rounds} --n {args.n} --seconds "
                f"{args.seconds:g} --write`, {time.strftime('%Y-%m-%d')}, medians of {args.rounds} "
                f"interleaved rounds, {os.cpu_count()} cores shared with other work (load average "
                f"{load:.1f} at the start). An echo round trip through each system's own routing: "
                "robotlab's broker and robotd, a raw pyzmq ROUTER forwarder and DEALER echo "
                "(bench/bus.py), AutoGen's gRPC host with an echo agent and a caller in two worker "
                "runtimes, Ray's echo actor called by a caller actor. AutoGen 0.7.5 (autogen-core, "
                "autogen-ext[grpc]) and Ray 2.60.0, installed by the first run into .peers-venv "
                "(about 340 MB, git-ignored). The ratios are the measure: the absolute numbers "
                "move with the machine's load, all four columns together.")
        write_section("Side by side: robotlab, raw pyzmq, AutoGen, Ray", f"{note}\n\n{table}")


if __name__ == "__main__":
    main()
