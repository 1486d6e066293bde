"""The wire format: round trips, frozen golden bytes, and every way decode refuses input."""

from __future__ import annotations

import pytest

from robotlab.bus import protocol
from robotlab.bus.protocol import Command, ErrorCode
from robotlab.errors import ProtocolError

HEADERS = {
    Command.HELLO: {"name": "bob", "instance": "i1", "role": "robot", "pid": 7},
    Command.WELCOME: {"broker": "b", "heartbeat": 1.0, "liveness": 3, "ack_timeout": 30.0, "max_message_bytes": 1024},
    Command.SEND: {"id": "e.1", "to": "bob", "type": "message", "any": True},
    Command.DELIVER: {"delivery": 4, "id": "e.1", "from": "alice", "from_instance": "i2", "to": "bob", "attempt": 1},
    Command.ACK: {"deliveries": [1, 2, 3]},
    Command.NACK: {"delivery": 4, "reason": "no"},
    Command.RECEIPT: {"id": "e.1", "status": "delivered", "to": "bob", "instances": ["i1"]},
    Command.HEARTBEAT: {},
    Command.BYE: {},
    Command.REQUEST: {"id": "e.a2", "op": "ps", "args": {}},
    Command.REPLY: {"id": "e.a2", "ok": True, "result": []},
    Command.ERROR: {"code": "malformed", "detail": "x"},
    Command.TOUCH: {"deliveries": [4]},
}


@pytest.mark.parametrize("command", list(Command))
def test_every_command_round_trips(command: Command) -> None:
    body = protocol.pack({"content": ["x", 1, b"\x00"]})
    frame = protocol.decode(protocol.encode(command, HEADERS[command], body))
    assert frame.command is command
    assert frame.header == HEADERS[command]
    assert protocol.unpack(frame.body) == {"content": ["x", 1, b"\x00"]}


def test_golden_bytes_freeze_the_format() -> None:
    # Changing these bytes is a wire-format change: bump protocol.VERSION with it.
    frames = protocol.encode(Command.SEND, {"id": "a.1", "to": "bob"}, protocol.pack("hi"))
    assert frames == [b"RLB\x01", b"\x03", b"\x82\xa2id\xa3a.1\xa2to\xa3bob", b"\xa2hi"]
    assert protocol.VERSION == 1


@pytest.mark.parametrize(
    ("frames", "code"),
    [
        ([b"RLB\x01", b"\x03", b"\x80"], ErrorCode.MALFORMED),
        ([b"XYZ\x01", b"\x03", b"\x80", b""], "bad_signature"),
        ([b"RLB", b"\x03", b"\x80", b""], "bad_signature"),
        ([b"RLB\x09", b"\x03", b"\x80", b""], ErrorCode.BAD_VERSION),
        ([b"RLB\x01", b"\x63", b"\x80", b""], ErrorCode.UNKNOWN_COMMAND),
        ([b"RLB\x01", b"\x03\x03", b"\x80", b""], ErrorCode.UNKNOWN_COMMAND),
        ([b"RLB\x01", b"\x03", b"\xc1", b""], ErrorCode.MALFORMED),
        ([b"RLB\x01", b"\x03", protocol.pack([1, 2]), b""], ErrorCode.MALFORMED),
        ([b"RLB\x01", b"\x03", protocol.pack({"id": "x"}), b""], ErrorCode.BAD_HEADER),
        ([b"RLB\x01", b"\x06", protocol.pack({"delivery": True}), b""], ErrorCode.BAD_HEADER),
    ],
)
def test_decode_refuses_bad_input_with_a_code_and_the_raw_frames(frames: list[bytes], code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        protocol.decode(frames)
    assert info.value.code == code
    assert info.value.frames == frames
