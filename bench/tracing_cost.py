"""The price of tracing on the bus, for ``python bench/bus.py --tracing`` (run from there).

Three robotlab runs per round, interleaved: no exporter configured (twice: the gap between
the two is the run's noise floor), and every process exporting spans to a JSON-lines file.
Then the operations tracing adds to one request/reply round trip when it is off, timed alone
against what the same path did before tracing existed, in nanoseconds per round trip.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import timeit
from collections.abc import Callable
from typing import Any


def off_path_ns() -> dict[str, float]:
    """Extra nanoseconds per round trip that tracing costs while off, operation by operation.

    One request/reply passes two SENDs (``message_spans.stamp`` instead of ``check_header``), two
    deliveries (``message_spans.carried``), one handler call (``message_spans.handle``) and two
    broker routes (the ``tracing.ENABLED`` check).
    """
    from robotlab.bus.member import message_spans
    from robotlab.bus.member.message import Message
    from robotlab.bus.wire import protocol
    from robotlab.bus.wire.protocol import Command
    from robotlab.observability import tracing

    header = {"id": "abc123.42", "to": "echo", "type": "request", "deadline": time.time() + 10}
    deliver = {**header, "delivery": 7, "from": "bench", "from_instance": "0123456789ab",
               "attempt": 1}
    message = Message("abc123.42", "bench", "0123456789ab", "echo", "request", None)

    def handler(m: Message) -> None:
        return None

    pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any], int]] = {
        "stamp (x2)": (lambda: message_spans.stamp(header),
                       lambda: protocol.check_header(Command.SEND, header), 2),
        "carried (x2)": (lambda: message_spans.carried(deliver), lambda: {}, 2),
        "handle (x1)": (lambda: message_spans.handle("echo", message, handler),
                        lambda: handler(message), 1),
        "route check (x2)": (lambda: tracing.ENABLED and "traceparent" in header, lambda: None, 2),
    }
    extra = {}
    for name, (new, old, times) in pairs.items():
        # Interleaved, best of many: on a shared machine the minimum is the least disturbed.
        new_ns = old_ns = float("inf")
        for _ in range(15):
            new_ns = min(new_ns, timeit.timeit(new, number=50_000) / 50_000 * 1e9)
            old_ns = min(old_ns, timeit.timeit(old, number=50_000) / 50_000 * 1e9)
        extra[name] = max(new_ns - old_ns, 0.0) * times
    return extra


def bare_span_us() -> float:
    """Microseconds the SDK takes to start and end one span with no processor: the floor of "on"."""
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("bench")
    return min(timeit.repeat(lambda: tracer.start_span("x").end(), number=2_000,
                             repeat=5)) / 2_000 * 1e6


def main(args: argparse.Namespace, run_robotlab: Callable[..., dict[str, float]],
         alternate: Callable[..., Any], write_section: Callable[[str, str], None]) -> None:
    from robotlab.observability import setup, trace_settings, tracing

    spans = os.path.join(tempfile.mkdtemp(prefix="rl-bench-"), "spans.jsonl")
    on_env = {"OTEL_TRACES_EXPORTER": "jsonl", "ROBOT_LAB_TRACES_FILE": spans}
    setup(trace_settings(on_env), "bench-client")  # the client's provider; its switch flips per run

    def run(on: bool) -> dict[str, float]:
        tracing.ENABLED = on
        try:
            return run_robotlab(args.n, args.seconds, env=on_env if on else None)
        finally:
            tracing.ENABLED = False

    off, again, on = alternate(args.rounds, lambda: run(False), lambda: run(False),
                               lambda: run(True))
    extra = off_path_ns()
    bare = bare_span_us()
    table = _table(off, again, on)
    added = sum(extra.values())
    micro = ("| operation, while off | ns per round trip |\n| --- | ---: |\n"
             + "".join(f"| {name} | {ns:,.0f} |\n" for name, ns in extra.items())
             + f"| total | {added:,.0f} ({added / (off['p50'] * 1e6):.3%} of the p50 above) |")
    load = os.getloadavg()[0]
    floor = ("When on, a round trip makes five spans (send, route, process, the reply's send and "
             "route) in three processes; one bare SDK span, started and ended with no exporter, "
             f"took {bare:,.0f} us here (load average {load:.1f} on {os.cpu_count()} cores), and "
             "exporting each adds its encoding.")
    print(table, micro, floor, sep="\n\n")
    if args.write:
        note = (f"`python bench/bus.py --tracing --n {args.n} --seconds {args.seconds:g} --rounds "
                f"{args.rounds} --write`, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
                f"medians of {args.rounds} interleaved rounds: robotlab request/reply (broker, "
                "echo robotd, client) with no exporter configured, the same again (the gap between "
                "the two is this run's noise), and with all three processes exporting spans "
                "(`OTEL_TRACES_EXPORTER=jsonl`). Target: with no exporter, no measurable cost.")
        write_section("Tracing cost",
                      f"{note}\n\n{table}\n\nWhat tracing adds to a round trip's path while it is "
                      "off, each operation timed alone against what the path did without it "
                      f"(timeit, best of 15 interleaved):\n\n{micro}\n\n{floor}")


def _table(off: dict[str, float], again: dict[str, float], on: dict[str, float]) -> str:
    rows = [("round trip p50 (ms)", "p50", 1), ("round trip p99 (ms)", "p99", 1),
            ("throughput, 8 outstanding (req/s)", "rate", -1)]
    lines = ["| measure | off | off again | noise | on (jsonl) | cost when on |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, key, sign in rows:
        noise = again[key] / off[key] - 1
        cost = (on[key] / off[key] - 1) * sign
        lines.append(f"| {name} | {off[key]:,.3f} | {again[key]:,.3f} | {noise:+.1%} | "
                     f"{on[key]:,.3f} | {cost:+.1%} |")
    return "\n".join(lines)
