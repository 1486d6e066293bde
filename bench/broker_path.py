"""The broker's instructions per request and reply, each message handled by one loop turn
(callgrind).

``bench/bus_instructions.py`` counts whole processes; there the broker's figure moves by 10%
between runs of the same code, because how many messages one loop turn reads, and how often the
journal's 10 ms interval passes inside a round trip, follow the timing, and valgrind slows the
broker some fifty times. Here one process holds a real :class:`~robotlab.broker.broker.Broker`
(its ROUTER bound on ``inproc://``, its journal in a temporary file) and two DEALER peers that
send what ``BusClient.request`` and a robotd echo send: the client sends the request, the broker
takes one turn (:meth:`~robotlab.broker.broker.Broker.turn`), the echo reads the DELIVER and
sends its reply carrying the ack, the broker takes one turn, the client reads the reply.
Heartbeats and the journal's interval are set so long that neither falls due while counting,
which is the common case natively too: a request answered within the interval is never written.

The peers' own work (two sends, two receives, one decode) is in the count, the same in every
run; ``inproc://`` needs no I/O thread. So the figure is not the broker process's of
``bus_instructions.py``, but it repeats to within a few hundred instructions, and a step of a
few hundred shows. Needs valgrind; not run by CI::

    python bench/broker_path.py [--n 2000]
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus_instructions  # noqa: E402  (bench/bus_instructions.py: the callgrind dump helpers)

LONG = 3600.0
"""Seconds: the heartbeat and the journal's interval, so that neither falls due while counting."""


def driver(n: int) -> None:
    """The driver, told when to count by :func:`bus_instructions.serve`."""
    bus_instructions.serve(_setup(), n)


def _setup() -> Callable[[int], None]:
    import zmq

    from robotlab.broker.broker import Broker
    from robotlab.bus.config import BrokerConfig
    from robotlab.bus.wire import protocol
    from robotlab.bus.wire.protocol import Command

    context = zmq.Context.instance()
    url = f"inproc://broker-path-{uuid.uuid4().hex}"
    journal = os.path.join(tempfile.mkdtemp(prefix="rl-path-"), "broker.db")
    broker = Broker(BrokerConfig(bind=url, heartbeat=LONG, journal=journal), context)
    broker.bind()
    # the file journal's: see the docstring
    broker.journal.interval = LONG  # type: ignore[attr-defined]

    def member(name: str) -> zmq.Socket:
        sock = context.socket(zmq.DEALER)
        sock.setsockopt(zmq.RCVTIMEO, 10_000)  # a bug here fails the run instead of hanging it
        sock.connect(url)
        sock.send(protocol.encode(Command.HELLO, {"name": name, "instance": uuid.uuid4().hex[:12],
                                                  "pid": os.getpid()})[0])
        broker.turn()
        if protocol.decode([sock.recv()]).command != Command.WELCOME:
            raise SystemExit(f"{name} was not welcomed")
        return sock

    client, echo = member("bench-client"), member("echo")
    body = protocol.pack({"task": "echo", "n": 0, "text": "x" * 64})

    ids = itertools.count()  # the warm-up's and the counted round trips' ids never repeat

    def round_trip(_: int) -> None:
        i = next(ids)
        request = {"id": f"c.{i}", "to": "echo", "type": "request", "deadline": time.time() + 60}
        client.send(protocol.encode(Command.SEND, request, body)[0])
        broker.turn()
        delivery = protocol.decode([echo.recv()])
        h = delivery.header
        reply = {"id": f"e.{i}", "to": h["from"], "type": "reply", "untracked": True,
                 "to_instance": h["from_instance"], "reply_to": h["id"], "ack": h["delivery"],
                 "receipt": False}
        echo.send(protocol.encode(Command.SEND, reply, delivery.body)[0])
        broker.turn()
        if protocol.decode([client.recv()]).header.get("reply_to") != request["id"]:
            raise SystemExit("the client got something other than its reply")

    return round_trip


def measure(n: int, scratch: Path) -> float:
    """Instructions per round trip of the driver, counted between two callgrind dumps."""
    out = scratch / "broker-path.out"
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
            "--role", "driver", "--n", str(n)]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        bus_instructions._expect(proc.stdout, "ready")
        bus_instructions._dump(proc.pid)  # part 1: start-up, imports and warm-up
        bus_instructions._say(proc.stdin, "go")
        bus_instructions._expect(proc.stdout, "done")
        bus_instructions._dump(proc.pid)  # part 2: the n round trips
        bus_instructions._say(proc.stdin, "exit")
    finally:
        proc.terminate()
        proc.wait(120)
    return bus_instructions._total(Path(f"{out}.2")) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["driver"])
    parser.add_argument("--n", type=int, default=2000, help="round trips counted")
    args = parser.parse_args()
    if args.role == "driver":
        return driver(args.n)
    scratch = Path(tempfile.mkdtemp(prefix="rl-path-"))
    print(f"broker path {measure(args.n, scratch) / 1000:9,.1f}k instructions per round trip",
          flush=True)


if __name__ == "__main__":
    main()
