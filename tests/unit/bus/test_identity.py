"""Identity belongs to the broker: instances bound to connections, HELLO replacing HELLO."""

from __future__ import annotations

import zmq

from robotlab import bus
from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Command, ErrorCode
from tests.waiting import wait_until


def raw_hello(url: str, context: zmq.Context, name: str, instance: str, **extra) -> protocol.Frame:
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(url)
    try:
        sock.send_multipart(protocol.encode(Command.HELLO,
                                            {"name": name, "instance": instance, **extra}))
        assert sock.poll(5000), "no answer to HELLO"
        return protocol.decode(sock.recv_multipart())
    finally:
        sock.close(linger=0)


def test_a_reconnect_with_the_clients_token_keeps_the_instance_and_a_stranger_gets_conflict(
        make_broker) -> None:
    embedded = make_broker(ack_timeout=5.0)
    with bus.connect(embedded.url, name="bob", context=embedded.context) as bob, \
            bus.connect(embedded.url, name="alice", context=embedded.context) as alice:
        # Given bob holding a delivery in flight
        held = []
        bob.on_message(lambda delivery, message: held.append(delivery), manual=True)
        tracker = alice.send("bob", "job")
        wait_until(lambda: held, message="bob holds the delivery")
        # When a stranger claims bob's instance id (which ps shows): refused
        refused = raw_hello(embedded.url, embedded.context, "bob", bob.instance)
        assert refused.command == Command.ERROR and refused.header["code"] == ErrorCode.CONFLICT
        # When bob itself reconnects on a fresh socket before the broker noticed: it keeps the
        # instance
        with bob._link._lock:
            bob._link.welcomed.clear()
            bob._link._reconnect()
        assert bob.wait_connected(5)
        held[0].ack()
        assert tracker.wait(5).instances == [bob.instance]
    assert embedded._broker.counters["error_conflict"] == 1


def _answer(sock: zmq.Socket) -> protocol.Frame:
    """The broker's next frame that is not a heartbeat: on a slow machine 200 HELLOs outlast
    the fixture's 0.2 s heartbeat, and one may come before a WELCOME."""
    while True:
        assert sock.poll(5000), "no answer to HELLO"
        frame = protocol.decode(sock.recv_multipart())
        if frame.command != Command.HEARTBEAT:
            return frame


def test_every_second_hello_on_one_connection_replaces_the_first(make_broker) -> None:
    embedded = make_broker()
    sock = embedded.context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(embedded.url)
    try:
        for i in range(200):
            sock.send_multipart(protocol.encode(Command.HELLO,
                                                {"name": f"n{i % 3}", "instance": f"i{i}"}))
            assert _answer(sock).command == Command.WELCOME
        registry = embedded._broker.registry
        assert (len(registry.by_identity), len(registry.by_instance)) == (1, 1)
        assert [[p.instance for p in registry.instances(f"n{i}")] for i in range(3)] == [[],
                                                                                         ["i199"],
                                                                                         []]
    finally:
        sock.close(linger=0)
