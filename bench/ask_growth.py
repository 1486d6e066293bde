"""A long run of ``Robot.ask``: does anything grow with the number of asks?

One journaled ``robotlab broker`` and the echoing robot of ``bench/robot_ask.py`` (its own
process); in this process a Robot asks it, block after block. After each block it prints the
asker's resident memory, the objects its garbage collector tracks, the median, 99th percentile
and slowest ask of the block, and the resident memory of the broker and the responder. What a
robot keeps per message must be bounded: resident memory and tracked objects stay flat, and the
slowest ask does not grow (the collector's full passes walk every tracked object, so kept
records show as pauses that lengthen block after block).

``--bytes N`` asks with a string of N characters instead of the small map (the responder sends
it back): what a robot keeps then shows in megabytes, not in objects.

    python bench/ask_growth.py [--blocks 6] [--asks 20000] [--bytes N]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bus import PAYLOAD, broker_argv, free_port, spawn, wait_robot  # noqa: E402

MB = 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--asks", type=int, default=20000, help="asks a block")
    parser.add_argument("--bytes", type=int, default=0,
                        help="ask with a string this long instead of the small map")
    args = parser.parse_args()
    content = "x" * args.bytes if args.bytes else PAYLOAD
    from robotlab import Robot

    url = f"tcp://127.0.0.1:{free_port()}"
    broker = spawn(broker_argv(url, journal=True))
    responder = spawn([sys.executable, str(Path(__file__).with_name("robot_ask.py")), "--role",
                       "robot-echo", "--url", url])
    try:
        wait_robot(url, "robot-echo")
        asker = Robot(name="robot-asker", bus=url)
        me, others = psutil.Process(), {"broker": psutil.Process(broker.pid),
                                        "responder": psutil.Process(responder.pid)}
        print("| asks | asker RSS (MB) | tracked objects | p50 (µs) | p99 (µs) | slowest (ms) | "
              "broker RSS (MB) | responder RSS (MB) |\n"
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for block in range(1, args.blocks + 1):
            took = []
            for _ in range(args.asks):
                started = time.perf_counter()
                asker.ask("robot-echo", content, timeout=30)
                took.append(time.perf_counter() - started)
            took.sort()
            print(f"| {block * args.asks:,} | {me.memory_info().rss / MB:.1f} | "
                  f"{len(gc.get_objects()):,} | {took[len(took) // 2] * 1e6:.0f} | "
                  f"{took[int(len(took) * 0.99)] * 1e6:.0f} | {took[-1] * 1e3:.1f} | "
                  f"{others['broker'].memory_info().rss / MB:.1f} | "
                  f"{others['responder'].memory_info().rss / MB:.1f} |", flush=True)
        asker.leave_bus()
    finally:
        for process in (broker, responder):
            process.terminate()
            process.wait()


if __name__ == "__main__":
    main()
