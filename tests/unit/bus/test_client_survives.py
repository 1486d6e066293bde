"""No bus thread can die: a real BusClient fed every malformed frame by a forged broker."""

from __future__ import annotations

import zmq

from robotlab import bus
from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Command
from tests.hostile import BROKER_COMMANDS, malformed_headers
from tests.waiting import wait_until


def test_a_client_drops_every_malformed_frame_and_still_handles_the_next_message() -> None:
    # Given a forged broker: a bare ROUTER socket that welcomes the client
    context = zmq.Context.instance()
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    url = f"inproc://forged-{id(router)}"
    router.bind(url)
    got: list[bus.Message] = []
    client = bus.BusClient(url, name="bob", context=context)
    client.on_message(lambda message: got.append(message))
    try:
        client.start(timeout=None)
        assert router.poll(5000)
        identity, *hello = router.recv_multipart()
        assert protocol.decode(hello).command == Command.HELLO

        def to_client(command: Command, header: dict, body: bytes = b"") -> None:
            router.send_multipart([identity, *protocol.encode(command, header, body)])

        to_client(Command.WELCOME, {"heartbeat": 5.0, "liveness": 3})
        assert client.wait_connected(5)
        # When it sends every wrong value of every field of every command, and garbage frames
        shapes = malformed_headers(BROKER_COMMANDS)
        for command, header in shapes:
            to_client(command, header, protocol.pack("poison"))
        garbage = ([b"RLB\x01"], [b"RLB\x01", b"\x04", b"\xc1", b""],
                   [b"RLB\x07", b"\x04", b"\x80", b""], [protocol.SIGNATURE + b"\x04"],
                   [protocol.SIGNATURE + b"\x04\x00\x00\x01\x00\x80"],
                   [protocol.SIGNATURE + b"\x04\x00\x00\x00\x01\xc1"])
        for frames in garbage:
            router.send_multipart([identity, *frames])
        to_client(Command.DELIVER, {**BROKER_COMMANDS[Command.DELIVER], "id": "m.2", "delivery": 8},
                  b"\xc1")
        to_client(Command.DELIVER, {**BROKER_COMMANDS[Command.DELIVER], "id": "m.3", "delivery": 9},
                  protocol.pack("ok"))
        # Then the undecodable body is nacked, the good message is handled and acked
        answers: list[protocol.Frame] = []

        def acked() -> bool:
            while router.poll(0):
                answers.append(protocol.decode(router.recv_multipart()[1:]))
            return any(a.command == Command.ACK and 9 in a.header["deliveries"] for a in answers)

        wait_until(acked, timeout=5, message="the good delivery is acked")
        assert [m.content for m in got] == ["ok"]
        nacks = [a.header for a in answers if a.command == Command.NACK]
        assert [n["delivery"] for n in nacks] == [8] and "undecodable body" in nacks[0]["reason"]
        # And every malformed frame was dropped and counted, with the I/O thread still running
        assert sum(client._link.dropped.values()) == len(shapes) + len(garbage)
        assert client._link._io_thread.is_alive() and client.connected
    finally:
        client.close(bye=False)
        router.close(linger=0)


def test_a_client_whose_socket_breaks_under_it_reconnects_and_still_answers(member) -> None:
    bob = member("bob")
    bob.on_message(lambda message: f"hi {message.content}")
    alice = member("alice")
    assert alice.request("bob", "one", timeout=5).content == "hi one"
    # When bob's socket is closed out from under its I/O loop (held lock: no thread is using it)
    with bob._link._lock:
        bob._link._socket.close(linger=0)
    # Then the loop counts the failure, opens a fresh socket, and bob answers again
    wait_until(lambda: bob._link.dropped["io_error"] >= 1 and not bob._link._socket.closed
               and bob.connected,
               message="the I/O loop noticed and was welcomed again on a fresh socket")
    assert alice.request("bob", "two", timeout=10).content == "hi two"
    assert bob._link._io_thread.is_alive()
