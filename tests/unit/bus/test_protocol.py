"""The wire format: round trips, frozen golden bytes, and every way decode refuses input."""

from __future__ import annotations

import pytest

from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Command, ErrorCode
from robotlab.errors import ProtocolError

HEADERS = {
    Command.HELLO: {"name": "bob", "instance": "i1", "role": "robot", "pid": 7},
    Command.WELCOME: {"broker": "b", "heartbeat": 1.0, "liveness": 3, "ack_timeout": 30.0,
                      "max_message_bytes": 1024},
    Command.SEND: {"id": "e.1", "to": "bob", "type": "message", "any": True},
    Command.DELIVER: {"delivery": 4, "id": "e.1", "from": "alice", "from_instance": "i2",
                      "to": "bob", "attempt": 1},
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
    assert frames == [b"RLB\x02\x03\x00\x00\x00\x0f\x82\xa2id\xa3a.1\xa2to\xa3bob\xa2hi"]
    assert protocol.VERSION == 2


def test_a_large_body_travels_in_its_own_frame_as_it_is() -> None:
    body = protocol.pack(b"x" * protocol.LARGE_BODY)
    frames = protocol.encode(Command.SEND, {"id": "a.1", "to": "bob"}, body)
    assert frames == [b"RLB\x02\x03\x00\x00\x00\x0f\x82\xa2id\xa3a.1\xa2to\xa3bob", body]
    assert frames[1] is body  # not copied on the way out
    view = memoryview(body)
    assert protocol.decode([frames[0], view]).body is view  # nor on the way in


def test_a_body_that_is_not_msgpack_passes_decode_untouched() -> None:
    frame = protocol.decode(protocol.encode(Command.SEND, {"id": "a.1", "to": "bob"},
                                            b"\xc1 not msgpack"))
    assert frame.body == b"\xc1 not msgpack"


def v2(command: int, header: bytes, body: bytes = b"", length: int | None = None) -> list[bytes]:
    """One v2 frame with a hand-set header length (default: the header's own)."""
    size = len(header) if length is None else length
    return [protocol.SIGNATURE + bytes([command]) + size.to_bytes(4, "big") + header + body]


@pytest.mark.parametrize(
    ("frames", "code"),
    [
        ([], "bad_signature"),
        ([b""], "bad_signature"),
        ([b"XYZ\x02\x03\x00\x00\x00\x01\x80"], "bad_signature"),
        ([b"RLB"], "bad_signature"),
        ([b"RLB\x01", b"\x03", b"\x80", b""], ErrorCode.BAD_VERSION),  # a version 1 peer
        ([b"RLB\x01\x03\x00\x00\x00\x01\x80"], ErrorCode.BAD_VERSION),
        ([b"RLB\x09\x03\x00\x00\x00\x01\x80"], ErrorCode.BAD_VERSION),
        # version 2's signature, version 1's framing
        ([b"RLB\x02", b"\x03", b"\x80", b""], ErrorCode.BAD_VERSION),
        ([*v2(3, protocol.pack({"id": "a", "to": "b"})), b"", b""], ErrorCode.MALFORMED),
        ([b"RLB\x02\x03\x00\x00"], ErrorCode.MALFORMED),  # truncated header length
        ([b"RLB\x02"], ErrorCode.MALFORMED),
        # length past the end
        (v2(3, protocol.pack({"id": "a", "to": "b"}), length=40), ErrorCode.MALFORMED),
        (v2(3, b"\x80", length=protocol.MAX_HEADER_BYTES + 1), ErrorCode.TOO_LARGE),
        # body twice
        ([*v2(3, protocol.pack({"id": "a", "to": "b"}), b"\xa2hi"), b"body"], ErrorCode.MALFORMED),
        (v2(0x63, b"\x80"), ErrorCode.UNKNOWN_COMMAND),
        (v2(0, b"\x80"), ErrorCode.UNKNOWN_COMMAND),
        (v2(3, b"\xc1"), ErrorCode.MALFORMED),
        (v2(3, b"\x82\xa2id"), ErrorCode.MALFORMED),  # a header cut short by its length
        (v2(3, protocol.pack([1, 2])), ErrorCode.MALFORMED),
        (v2(3, protocol.pack({"id": "x"})), ErrorCode.BAD_HEADER),
        (v2(6, protocol.pack({"delivery": True})), ErrorCode.BAD_HEADER),
    ],
)
def test_decode_refuses_bad_input_with_a_code_and_the_raw_frames(frames: list[bytes],
                                                                 code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        protocol.decode(frames)
    assert info.value.code == code
    assert info.value.frames == frames


def test_a_version_1_peer_is_told_both_versions() -> None:
    with pytest.raises(ProtocolError,
                       match="version 1 is not supported: this side speaks version 2"):
        protocol.decode([b"RLB\x01", b"\x01", protocol.pack({"name": "old", "instance": "i"}), b""])
