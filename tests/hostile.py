"""A raw DEALER socket that speaks the wire protocol however it likes: a hostile local process,
or a peer whose every ACK, NACK, TOUCH and silence a test chooses.

It is not a robotlab component (it is the peer the broker must withstand), so tests use it in
place of a BusClient wherever they need to send what no BusClient would, or to control exactly
when a peer speaks.
"""

from __future__ import annotations

import time
from typing import Any

import zmq

from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Command, Frame


class Raw:
    """One raw connection to a broker."""

    def __init__(self, url: str, context: zmq.Context | None = None) -> None:
        self.socket = (context or zmq.Context.instance()).socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(url)

    def send(self, command: Command, header: dict[str, Any], body: Any = None) -> None:
        """Send one message with any header (no schema check on this side)."""
        packed = protocol.pack(body) if body is not None else b""
        self.socket.send_multipart(protocol.encode(command, header, packed))

    def send_frames(self, frames: list[bytes]) -> None:
        """Send raw frames."""
        self.socket.send_multipart(frames)

    def drain(self) -> list[Frame]:
        """Every message waiting now, without blocking."""
        frames = []
        while self.socket.poll(0):
            frames.append(protocol.decode(self.socket.recv_multipart()))
        return frames

    def expect(self, command: Command, timeout: float = 5.0) -> Frame:
        """The next message of ``command`` (others are skipped); AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        while self.socket.poll(max(int((deadline - time.monotonic()) * 1000), 0)):
            frame = protocol.decode(self.socket.recv_multipart())
            if frame.command == command:
                return frame
        raise AssertionError(f"no {command.name} within {timeout}s")

    def hello(self, name: str, instance: str, **extra: Any) -> Frame:
        """Say HELLO and return the broker's answer (WELCOME or ERROR)."""
        self.send(Command.HELLO, {"name": name, "instance": instance, "role": "robot", **extra})
        deadline = time.monotonic() + 5
        while self.socket.poll(max(int((deadline - time.monotonic()) * 1000), 0)):
            frame = protocol.decode(self.socket.recv_multipart())
            if frame.command in (Command.WELCOME, Command.ERROR):
                return frame
        raise AssertionError("no answer to HELLO within 5s")

    def close(self) -> None:
        """Close the socket at once."""
        self.socket.close(linger=0)


def wrong_values() -> list[Any]:
    """Values of every wrong kind, size and sign for some header field."""
    return [{"a": 1}, [1, [2]], "x" * (protocol.TEXT_MAX + 1), -1, 2**64 - 1, float("nan"), True,
            b"\x00", 1.5, "s"]


PEER_COMMANDS = {
    Command.SEND: {"id": "m.1", "to": "bob", "type": "message"},
    Command.ACK: {"deliveries": [1]},
    Command.TOUCH: {"deliveries": [1]},
    Command.NACK: {"delivery": 1, "reason": "no"},
    Command.REQUEST: {"id": "r.1", "op": "ping", "args": {}},
}
"""A valid header of each command a peer sends that has fields."""
BROKER_COMMANDS = {
    Command.DELIVER: {"delivery": 7, "id": "m.1", "from": "alice", "from_instance": "a-1",
                      "to": "bob"},
    Command.RECEIPT: {"id": "m.1", "status": "delivered", "to": "bob", "instances": ["b-1"]},
    Command.REPLY: {"id": "r.1", "ok": True, "result": []},
    Command.ERROR: {"code": "malformed", "detail": "x"},
    Command.WELCOME: {"heartbeat": 1.0, "liveness": 3},
}
"""A valid header of each command the broker sends that has fields."""


Headers = dict[Command, dict[str, Any]]
"""A valid header by command, as in PEER_COMMANDS and BROKER_COMMANDS."""


def malformed_headers(valid: Headers = PEER_COMMANDS) -> list[tuple[Command, dict[str, Any]]]:
    """For every command in ``valid`` and every field of its schema, the header with each wrong
    value."""
    shapes = []
    for command, base in valid.items():
        for name, spec in protocol.SCHEMA[command].items():
            for value in wrong_values():
                if not spec.accepts(value):
                    shapes.append((command, {**base, name: value}))
    return shapes
