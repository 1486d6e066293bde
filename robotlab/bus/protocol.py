"""The robotlab bus wire protocol: the only place frames are built or parsed.

Every message is four ZeroMQ frames (a ROUTER prepends the peer's identity on the broker side)::

    frame  content                   notes
    0      b"RLB" + VERSION (1 byte) signature; unknown signature: dropped and counted
    1      command (1 byte)          a Command value
    2      header                    msgpack map; fields per command below
    3      body                      msgpack bytes, opaque to the broker (b"" when unused)

Peer -> broker:

    HELLO      {name, instance, role, pid, parent?, max_inflight?}   must come first
    SEND       {id, to, type, to_instance?, reply_to?, ack?, deadline?,
                any?, idempotent?, receipt?, untracked?, hold?}       body = payload
    ACK        {deliveries: [delivery ids]}                           batched acks
    TOUCH      {deliveries: [delivery ids]}                           still working on these
    NACK       {delivery, reason}
    HEARTBEAT  {}
    BYE        {}
    REQUEST    {id, op, args}                                         admin: ps, dlq.*, stats, ping

Broker -> peer:

    WELCOME    {broker, heartbeat, liveness, ack_timeout, max_message_bytes}
    DELIVER    {delivery, id, from, from_instance, to, type, reply_to?, deadline?, attempt}
    RECEIPT    {id, status, detail?, to, dlq_id?, instances?}        the fate of a SEND
    HEARTBEAT  {seen?}                                                frames handled from this peer
    REPLY      {id, ok, result? | error?}                             answers REQUEST
    ERROR      {code, detail, ref?}                                   bad input; ref echoes an id

``SEND.ack`` lets a reply carry the ack of the delivery it answers, saving a round trip.
``SEND.receipt = false`` asks only for failure receipts; ``SEND.untracked`` (replies) is
delivered with ``delivery = 0``, held in no in-flight table and never acked: the requester's
own resend is a reply's retry. ``SEND.hold`` (seconds) overrides how long the broker holds
the message while every member of its name is away. TOUCH pushes the ack deadline of deliveries a live receiver
still holds (queued or running) by another ack timeout, never past the message's ``deadline``:
the ack timeout catches silent receivers, not long tasks. ``HEARTBEAT.seen`` counts the
frames the broker has handled from this connection (its HELLO is 1): a member keeps each reply,
ack and nack it sent until ``seen`` covers it, and sends what it still keeps after a WELCOME.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import msgpack
import zmq

from robotlab.errors import ProtocolError

VERSION = 1
SIGNATURE = b"RLB" + bytes([VERSION])
SIGNATURE_PREFIX = b"RLB"


class Command(IntEnum):
    """One-byte command codes (frame 1)."""

    HELLO = 1
    WELCOME = 2
    SEND = 3
    DELIVER = 4
    ACK = 5
    NACK = 6
    RECEIPT = 7
    HEARTBEAT = 8
    BYE = 9
    REQUEST = 10
    REPLY = 11
    ERROR = 12
    TOUCH = 13


class ErrorCode:
    """Codes carried by ERROR frames."""

    BAD_VERSION = "bad_version"
    MALFORMED = "malformed"
    UNKNOWN_COMMAND = "unknown_command"
    NOT_READY = "not_ready"
    TOO_LARGE = "too_large"
    BAD_HEADER = "bad_header"
    FORBIDDEN = "forbidden"


class Status:
    """The fate of a sent message, as RECEIPT.status tells it."""

    DELIVERED = "delivered"
    UNDELIVERABLE = "undeliverable"
    NACKED = "nacked"
    TIMEOUT = "timeout"
    BUSY = "busy"

    FAILURES = frozenset({UNDELIVERABLE, NACKED, TIMEOUT, BUSY})


# Header fields a command must carry, with their types; checked by decode().
REQUIRED: dict[Command, dict[str, type | tuple[type, ...]]] = {
    Command.HELLO: {"name": str, "instance": str},
    Command.SEND: {"id": str, "to": str},
    Command.ACK: {"deliveries": list},
    Command.TOUCH: {"deliveries": list},
    Command.NACK: {"delivery": int},
    Command.REQUEST: {"id": str, "op": str},
    Command.WELCOME: {"heartbeat": (int, float), "liveness": int},
    Command.DELIVER: {"delivery": int, "id": str, "from": str},
    Command.RECEIPT: {"id": str, "status": str},
    Command.REPLY: {"id": str, "ok": bool},
    Command.ERROR: {"code": str},
}


_BY_BYTE = {bytes([c]): c for c in Command}
_COMMAND_BYTES = {c: bytes([c]) for c in Command}
_MORE = int(zmq.SNDMORE) | int(zmq.NOBLOCK)
_LAST = int(zmq.NOBLOCK)
_RCVMORE = int(zmq.RCVMORE)


@dataclass(frozen=True)
class Frame:
    """One decoded protocol message. ``body`` stays msgpack bytes until someone unpacks it."""

    command: Command
    header: dict[str, Any] = field(default_factory=dict)
    body: bytes = b""


def pack(value: Any) -> bytes:
    """Encode plain data as msgpack (bytes stay bytes, strings stay strings)."""
    return msgpack.packb(value, use_bin_type=True)


def unpack(data: bytes) -> Any:
    """Decode msgpack produced by :func:`pack`."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def encode(command: Command, header: dict[str, Any] | None = None, body: bytes = b"") -> list[bytes]:
    """Build the frames of one message (without any routing identity)."""
    return [SIGNATURE, _COMMAND_BYTES[command], pack(header or {}), body]


def recv(socket: zmq.Socket) -> list[bytes]:
    """Receive one whole message without blocking (raises ``zmq.Again``); ints, not enums."""
    frames = [socket.recv(_LAST)]
    while socket.get(_RCVMORE):
        frames.append(socket.recv(_LAST))
    return frames


def send(socket: zmq.Socket, frames: list[bytes]) -> None:
    """Send frames without blocking (raises ``zmq.Again``); cheaper than ``send_multipart``.

    pyzmq's ``send_multipart`` combines enum flags for every frame, which costs about as much
    as the send itself at the broker's message rates.
    """
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        socket.send(frame, _MORE if i < last else _LAST)


def decode(frames: list[bytes]) -> Frame:
    """Parse frames into a Frame.

    Raises:
        ProtocolError: with ``code`` set to an ErrorCode (or ``bad_signature``) and the raw
            frames attached.
    """
    if len(frames) != 4:
        raise ProtocolError(f"expected 4 frames, got {len(frames)}", code=ErrorCode.MALFORMED, frames=frames)
    signature, command_frame, header_frame, body = frames
    if signature[:3] != SIGNATURE_PREFIX or len(signature) != 4:
        raise ProtocolError("unknown signature", code="bad_signature", frames=frames)
    if signature[3] != VERSION:
        raise ProtocolError(
            f"protocol version {signature[3]} is not supported (this side speaks {VERSION})",
            code=ErrorCode.BAD_VERSION,
            frames=frames,
        )
    command = _BY_BYTE.get(command_frame)
    if command is None:
        raise ProtocolError(f"unknown command {command_frame[:8]!r}", code=ErrorCode.UNKNOWN_COMMAND, frames=frames)
    header = _decode_header(header_frame, frames)
    _check_required(command, header, frames)
    return Frame(command, header, body)


def _decode_header(data: bytes, frames: list[bytes]) -> dict[str, Any]:
    try:
        header = unpack(data)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ProtocolError(f"header is not msgpack: {exc}", code=ErrorCode.MALFORMED, frames=frames) from exc
    if not isinstance(header, dict):
        raise ProtocolError("header is not a map", code=ErrorCode.MALFORMED, frames=frames)
    return header


_REQUIRED_ITEMS = {command: tuple(fields.items()) for command, fields in REQUIRED.items()}


def _check_required(command: Command, header: dict[str, Any], frames: list[bytes]) -> None:
    for name, kind in _REQUIRED_ITEMS.get(command, ()):
        value = header.get(name)
        if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
            raise ProtocolError(
                f"{command.name} header needs {name!r} of type {_type_names(kind)}",
                code=ErrorCode.BAD_HEADER,
                frames=frames,
            )


def _type_names(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)
