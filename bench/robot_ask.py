"""What a robot's own side of a request costs: ``Robot.ask`` against ``BusClient.request``,
interleaved in one run on one broker.

One journaled ``robotlab broker``, the echo robotd of ``bench/bus.py`` (``--handler
bus:echo_handler``) and a Robot whose inline responder echoes (its own process), on tcp
loopback. In this process a ``BusClient`` requests from the echo robotd and a ``Robot`` asks
the echoing robot, ``n`` sequential round trips each, taking turns round after round
(A B A B ...): each round's ratio compares figures of the same minute, on the same broker, so
the machine's drift falls on both sides. Target (issue: the bus at the limit): ``Robot.ask``
within 1.3x of ``BusClient.request``, that is, the robot's records and hooks on both sides
cost no more than a third of what the client's request costs.

    python bench/robot_ask.py [--n 3000] [--rounds 5] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bus import PAYLOAD, broker_argv, free_port, latency, spawn, wait_robot  # noqa: E402


def robot_echo(url: str) -> None:
    """A Robot named 'robot-echo' whose responder sends each message's content back."""
    from robotlab import Robot
    from robotlab.bus import inline

    # inline, as the echo handler BusClient.request is measured against: the same thread
    Robot(name="robot-echo", bus=url).respond_to_tasks(inline(lambda message: message.content))
    threading.Event().wait()


def measure(n: int, rounds: int) -> list[dict[str, float]]:
    """Each round's p50 and p99 (ms) of ``request`` and of ``ask``, in the order run."""
    from robotlab import Robot, bus

    url = f"tcp://127.0.0.1:{free_port()}"
    procs = [spawn(broker_argv(url, journal=True)),
             spawn([sys.executable, "-m", "robotlab.robotd", "--name", "echo", "--broker", url,
                    "--handler", "bus:echo_handler"]),
             spawn([sys.executable, __file__, "--role", "robot-echo", "--url", url])]
    try:
        wait_robot(url, "echo")
        wait_robot(url, "robot-echo")
        asker = Robot(name="robot-asker", bus=url)
        results = []
        with bus.connect(url, name="bench-client") as client:
            for _ in range(rounds):
                request = latency(lambda i: client.request("echo", PAYLOAD, timeout=10), n)
                ask = latency(lambda i: asker.ask("robot-echo", PAYLOAD, timeout=10), n)
                results.append({"request p50": request[0], "request p99": request[1],
                                "ask p50": ask[0], "ask p99": ask[1]})
        asker.leave_bus()
        return results
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def table(results: list[dict[str, float]]) -> str:
    """One row per round, then the medians; the ratio is taken round by round."""
    lines = ["| round | BusClient.request p50 (ms) | Robot.ask p50 (ms) | ratio | request p99 | "
             "ask p99 |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for number, row in enumerate(results, 1):
        lines.append(f"| {number} | {row['request p50']:.3f} | {row['ask p50']:.3f} | "
                     f"{row['ask p50'] / row['request p50']:.2f}x | {row['request p99']:.3f} | "
                     f"{row['ask p99']:.3f} |")
    middle = {key: statistics.median(row[key] for row in results) for key in results[0]}
    ratio = statistics.median(row["ask p50"] / row["request p50"] for row in results)
    lines.append(f"| median | {middle['request p50']:.3f} | {middle['ask p50']:.3f} | "
                 f"{ratio:.2f}x | {middle['request p99']:.3f} | {middle['ask p99']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["robot-echo"])
    parser.add_argument("--url")
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write", action="store_true",
                        help="record the results in docs/benchmarks.md")
    args = parser.parse_args()
    if args.role == "robot-echo":
        return robot_echo(args.url)
    load = os.getloadavg()[0]
    result = table(measure(args.n, args.rounds))
    print(result)
    if args.write:
        from bus import write_section

        write_section("Robot.ask round trip (a robot in another process)",
                      f"`python bench/robot_ask.py --n {args.n} --rounds {args.rounds} --write`, "
                      f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load average "
                      f"{load:.2f} at the start: `Robot.ask` to a robot whose inline "
                      "`respond_to_tasks` echoes, and `BusClient.request` to the echo robotd, "
                      f"{args.n} sequential round trips each, in turns on one broker. Target: "
                      f"within 1.3x.\n\n{result}")


if __name__ == "__main__":
    main()
