"""Protocol benchmark: what the header schema check adds to decoding one frame.

Times ``protocol.decode`` of a typical SEND and DELIVER with the schema check, and with it
replaced by a no-op, in the same process (best of 5 repeats), and prints both.

    python bench/protocol.py [--n 200000] [--write]
"""

from __future__ import annotations

import argparse
import os
import timeit

# The pure-Python source of the bus (robotlab/bus/native.py): only there can the schema check be
# swapped out, because compiled modules call each other directly. bench/bus_instructions.py
# counts what compiling saves.
os.environ.setdefault("ROBOT_LAB_PURE", "1")

from robotlab.bus.wire import protocol  # noqa: E402
from robotlab.bus.wire.protocol import Command  # noqa: E402

FRAMES = {
    "SEND": protocol.encode(Command.SEND,
                            {"id": "ab12cd.17", "to": "bob", "type": "request", "deadline": 1.8e9,
                                           "any": True}, protocol.pack({"task": "x" * 64})),
    "DELIVER": protocol.encode(Command.DELIVER, {"id": "ab12cd.17", "to": "bob", "type": "request",
                                                 "deadline": 1.8e9, "from": "alice",
                                                 "from_instance": "a1b2c3d4e5f6", "delivery": 123,
                                                 "attempt": 1}, b""),
}


def best_us(frames: list[bytes], n: int) -> float:
    """Microseconds per decode, best of 5 repeats of ``n``."""
    return min(timeit.repeat(lambda: protocol.decode(frames), number=n, repeat=5)) / n * 1e6


def measure(n: int) -> list[tuple[str, float, float]]:
    """(frame, with the schema check, without it) in microseconds."""
    rows = []
    for label, frames in FRAMES.items():
        checked = best_us(frames, n)
        saved = protocol._check_header
        protocol._check_header = lambda command, header, raw: None  # the only way to time it apart
        try:
            bare = best_us(frames, n)
        finally:
            protocol._check_header = saved
        rows.append((label, checked, bare))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--write", action="store_true",
                        help="record the results in docs/benchmarks.md")
    args = parser.parse_args()
    rows = measure(args.n)
    load = os.getloadavg()[0]
    lines = ["| frame | decode with the schema (us) | without (us) | the schema costs (us) |",
             "| --- | ---: | ---: | ---: |"]
    lines += [f"| {label} | {a:.2f} | {b:.2f} | {a - b:.2f} |" for label, a, b in rows]
    table = "\n".join(lines)
    print(table)
    print(f"load average {load:.1f}")
    if args.write:
        from bus import write_section

        head = (f"`python bench/protocol.py --n {args.n} --write`, best of 5, load average "
                f"{load:.1f} on 2 cores (other work was running: compare the two columns, not the "
                "absolute numbers).")
        write_section("Header schema check (protocol.decode)", head + "\n\n" + table)


if __name__ == "__main__":
    main()
