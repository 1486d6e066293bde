"""Random frame lists fed straight to Broker.dispatch: it always returns, and replies or counts."""

from __future__ import annotations

import random

import zmq

from robotlab.broker import Broker
from robotlab.bus import BrokerConfig
from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Command


def random_frames(rng: random.Random) -> list[bytes]:
    def blob() -> bytes:
        return rng.randbytes(rng.randint(0, 16))

    headers = [1, "x", [], None, {"id": 3}, {"to": None}, {"name": "n", "instance": 5},
               {"deliveries": "x"}, {"id": "a", "to": "b"}, {"delivery": "7"}, {"id": "q", "op": 4}]
    shapes = [
        lambda: [blob() for _ in range(rng.randint(0, 6))],
        lambda: [protocol.SIGNATURE + bytes([rng.randint(0, 255)]) + blob(), blob()],
        lambda: [protocol.SIGNATURE + bytes([rng.choice(list(Command))])
                 + rng.randint(0, 2**32 - 1).to_bytes(4, "big") + blob()],
        lambda: [protocol.encode(rng.choice(list(Command)), rng.choice(headers), blob())[0]],
        lambda: [b"RLB" + bytes([rng.randint(0, 3)]), b"\x03",
                 protocol.pack({"id": "a", "to": "b"}), b""],
    ]
    return rng.choice(shapes)()


def test_dispatch_survives_thousands_of_random_frame_lists() -> None:
    broker = Broker(BrokerConfig(bind="inproc://fuzz"), zmq.Context.instance())
    broker.bind()
    rng = random.Random(20261130)
    try:
        for i in range(5000):
            before = sum(broker.counters.values())
            broker.dispatch([f"peer-{i % 7}".encode(), *random_frames(rng)])
            # Every bad input leaves a trace: an error reply sent (and counted) or a counted drop.
            assert sum(broker.counters.values()) > before
        assert broker.counters.get("internal_errors", 0) == 0
        assert broker.counters["dropped_bad_signature"] > 0
        assert broker.counters["error_not_ready"] > 0
    finally:
        broker.socket.close(linger=0)


def test_a_fuzzed_broker_still_routes() -> None:
    from robotlab import bus
    from robotlab.bus import EmbeddedBroker

    embedded = EmbeddedBroker().start()
    try:
        rng = random.Random(7)
        sock = embedded.context.socket(zmq.DEALER)
        sock.connect(embedded.url)
        for _ in range(2000):
            frames = random_frames(rng)
            if frames:
                sock.send_multipart(frames)
        sock.close(linger=0)
        with bus.connect(embedded.url, name="alice") as alice, bus.connect(embedded.url,
                                                                           name="bob") as bob:
            bob.on_message(lambda m: m.content * 2)
            assert alice.request("bob", 21, timeout=5).content == 42
    finally:
        embedded.stop()
