"""The robotlab bus wire protocol: the only place frames are built or parsed.

Every message is one ZeroMQ frame (a ROUTER prepends the peer's identity on the broker side)::

    bytes        content                     notes
    0-3          b"RLB" + VERSION (1 byte)   signature; unknown signature: dropped and counted
    4            command (1 byte)            a Command value
    5-8          header length (uint32, BE)  at most MAX_HEADER_BYTES
    9-9+len      header                      msgpack map; fields per command below
    the rest     body                        msgpack bytes, opaque to the broker (empty when unused)

A body of ``LARGE_BODY`` bytes or more travels as a second frame instead of the rest of the
first one, so that neither end copies it: the broker forwards that frame's buffer as it came.
The broker reads only the header; it never decodes a body, but a HELLO's right after a standby
takeover (its claims, below).

Peer -> broker:

    HELLO      {name, instance, token?, role, pid, parent?, max_inflight?}   must come first
                                                          body = claims (may be empty)
    SEND       {id, to, type, to_instance?, reply_to?, ack?, deadline?, max_handling?,
                any?, idempotent?, receipt?, untracked?, hold?, again?, traceparent?,
                tracestate?}
                                                                      body = payload
    ACK        {deliveries: [delivery ids]}                           batched acks
    TOUCH      {deliveries: [delivery ids], effects?: [keys]}        still working on these
    NACK       {delivery, reason}
    HEARTBEAT  {stats?}                                               stats: a member's own figures
    BYE        {}
    REQUEST    {id, op, args}                                         admin: ps, dlq.*, stats, ping

Broker -> peer:

    WELCOME    {broker, heartbeat, liveness, ack_timeout, max_message_bytes}
    DELIVER    {delivery, id, from, from_instance, to, type, reply_to?, deadline?, attempt,
                effects_done?}
               (a SEND's other fields, but the broker's own: receipt, untracked, ack,
               to_instance, any, idempotent, max_handling, hold)
    RECEIPT    {id, status, detail?, to, dlq_id?, instances?}        the fate of a SEND
    HEARTBEAT  {seen?}                                                frames handled from this peer
    REPLY      {id, ok, result? | error?}                             answers REQUEST
               body = the result, packed, when too large for the header (result left out)
    ERROR      {code, detail, ref?}                                   bad input; ref echoes an id

``SEND.ack`` lets a reply carry the ack of the delivery it answers, saving a round trip.
``SEND.receipt = false`` asks only for failure receipts; ``SEND.untracked`` (replies) is
delivered with ``delivery = 0``, held in no in-flight table and never acked: the requester's
own resend is a reply's retry. ``SEND.hold`` (seconds) overrides how long the broker holds
the message while every member of its name is away. ``SEND.again`` marks a message a client
sends again after a reconnect: after a restart or a takeover, an ``any`` one waits for the
members that may have had it (``robotlab.broker.claims``), where a first send goes at once.
``traceparent``/``tracestate`` are the
W3C trace context of a traced message; the broker replaces them with its own span's.

TOUCH pushes the ack deadline of deliveries a live receiver still holds (queued or running) by
another ack timeout, never past the message's ``deadline``: the ack timeout catches silent
receivers, not long tasks; ``max_handling`` (seconds, capped by the broker's own maximum)
bounds how long any delivery may stay in flight, touched or not. A TOUCH with ``effects``
names one delivery, and the idempotency keys of the side-effect calls its work has completed
(:mod:`robotlab.tools.effects`): the broker keeps them with the message (journaled), and
every later attempt's DELIVER carries them as ``effects_done`` (at most ``EFFECTS_MAX``).

``HEARTBEAT.seen`` counts the frames the broker has handled from this connection (its HELLO is
1): a member keeps each reply, ack and nack it sent until ``seen`` covers it, and sends what it
still keeps after a WELCOME. ``HEARTBEAT.stats`` (tokens, dollars, a short status) is what a
member reports of itself for ``ps``; it is sent when it changes, at most once a heartbeat.

A HELLO's body, when not empty, is a msgpack list of the [sender instance, id] of the messages
the member remembers having had (working on them, or done; the newest that fit in half the
broker's ``max_message_bytes``); a broker that has just taken over from its standby peer reads
it to learn who holds which ``any`` message (``robotlab.broker.claims``), every other broker
ignores it.

Every header field's type and bound is in :data:`SCHEMA`; :func:`decode` enforces it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

import msgpack
import zmq
from zmq.backend import Socket as CompiledSocket

from robotlab.errors import ProtocolError

# installed on import: a cheaper socket.get for EVENTS and RCVMORE
from . import sockopt  # noqa: F401
from .plain_data import ThreadPacker
from .schema import (  # noqa: F401  (re-exported: protocol is where callers find the vocabulary)
    BATCH_MAX,
    EFFECTS_MAX,
    ID_MAX,
    INT_MAX,
    MAX_HEADER_BYTES,
    NAME_MAX,
    SCHEMA,
    TEXT_MAX,
    Command,
    ErrorCode,
    Field,
    Status,
    _check_header,
    check_fields,
    check_header,
)

VERSION: Final = 2
SIGNATURE: Final = b"RLB" + bytes([VERSION])
SIGNATURE_PREFIX: Final = b"RLB"
PREFIX_BYTES: Final = 9
"""Signature (4), command (1) and header length (4): the fixed start of every message."""
LARGE_BODY: Final = 64 * 1024
"""Bodies this big or bigger travel in a frame of their own (pyzmq's zero-copy threshold)."""
_PREFIX: Final = struct.Struct(">4sBI")

Body = bytes | memoryview
"""A message body: bytes, or a view into the frame it arrived in (never copied)."""


_BY_CODE: Final = {int(c): c for c in Command}
_MORE: Final = int(zmq.SNDMORE) | int(zmq.NOBLOCK)
_LAST: Final = int(zmq.NOBLOCK)
_RCVMORE: Final = int(zmq.RCVMORE)
_EVENTS: Final = int(zmq.EVENTS)
_POLLIN: Final = int(zmq.POLLIN)
_unpackb: Final = msgpack.unpackb
_PACK: Final = ThreadPacker()
# pyzmq's compiled socket methods, called unbound: ``zmq.Socket`` defines ``__getattr__``
# (socket options as attributes), so every method looked up on a socket goes through CPython's
# slow attribute hook and builds a bound method, about a thousand instructions a call.
compiled_send: Final[Callable[..., Any]] = CompiledSocket.send
"""pyzmq's compiled send: its Python wrapper on ``zmq.Socket`` only adds draft-API options
(routing ids, groups) no robotlab socket uses, and costs about as much again as the send."""
compiled_recv: Final[Callable[..., Any]] = CompiledSocket.recv
_get: Final[Callable[..., Any]] = CompiledSocket.get


class Frame:
    """One decoded protocol message. ``body`` stays msgpack bytes until someone unpacks it.

    A plain class, not a dataclass: every message at every hop builds one, and compiled
    (docs/bus.md, "The compiled hot path") its construction is a native call, where a
    dataclass's generated ``__init__`` runs interpreted (about 1.7k instructions a frame)."""

    __slots__ = ("command", "header", "body", "header_bytes")

    def __init__(self, command: Command, header: dict[str, Any] | None = None,
                 body: Body = b"", header_bytes: int = 0) -> None:
        self.command = command
        self.header: dict[str, Any] = {} if header is None else header
        self.body = body
        self.header_bytes = header_bytes
        """The header's size as it came, packed (0 for a frame not decoded from the wire)."""

    def __repr__(self) -> str:
        return f"Frame(command={self.command!r}, header={self.header!r}, body={self.body!r})"


def pack(value: Any) -> bytes:
    """Encode plain data as msgpack (bytes stay bytes, strings stay strings)."""
    return _PACK.pack(value)


def unpack(data: Body) -> Any:
    """Decode msgpack produced by :func:`pack`."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def packer() -> Callable[[Any], bytes]:
    """A :func:`pack` for one thread to keep: the same bytes from a Packer of its own, without
    the thread-local read :func:`pack` makes to find this thread's (the broker's loop packs every
    header it sends with one)."""
    return msgpack.Packer(use_bin_type=True).pack


def encode(command: Command, header: Any = None, body: Body = b"",
           packs: Callable[[Any], bytes] = pack) -> list[Body]:
    """Build the frames of one message (without any routing identity): one frame, or two when
    the body is at least ``LARGE_BODY`` bytes (then it is sent as it is, never copied).
    ``packs`` encodes the header (a :func:`packer` of the calling thread, or :func:`pack`)."""
    head = packs(header or {})
    start = _PREFIX.pack(SIGNATURE, command, len(head))
    if len(body) >= LARGE_BODY:
        return [start + head, body]
    return [b"".join((start, head, body))]


def command_of(frames: list[Body]) -> int:
    """The command byte of frames built by :func:`encode`."""
    return frames[0][4]


def readable(socket: zmq.Socket) -> bool:
    """Whether a message waits on ``socket`` (ZMQ_EVENTS, read as an int option, has POLLIN)."""
    events = _get(socket, _EVENTS)
    return isinstance(events, int) and bool(events & _POLLIN)


def recv(socket: zmq.Socket, copied: int = 1) -> list[Body]:
    """Receive one whole message without blocking (raises ``zmq.Again``); ints, not enums.

    The first ``copied`` frames come as bytes (the identity on a ROUTER, and the message);
    any later one is a large body, kept as a view of the received frame: no copy is made.
    """
    frames: list[Body] = [compiled_recv(socket, _LAST)]
    while _get(socket, _RCVMORE):
        if len(frames) < copied:
            frames.append(compiled_recv(socket, _LAST))
        else:
            frames.append(compiled_recv(socket, _LAST, False).buffer)
    return frames


def send(socket: zmq.Socket, frames: list[Body]) -> None:
    """Send frames without blocking (raises ``zmq.Again``); cheaper than ``send_multipart``.

    pyzmq's ``send_multipart`` combines enum flags for every frame, which costs about as much
    as the send itself at the broker's message rates, and its ``send`` wraps the compiled one
    (:data:`compiled_send`). Frames of ``LARGE_BODY`` bytes or more are sent by reference
    (``copy=False``: told to copy, pyzmq copies a frame of any size).
    """
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        compiled_send(socket, frame, _MORE if i < last else _LAST, len(frame) < LARGE_BODY)


def decode(frames: list[Body]) -> Frame:
    """Parse the frames of one message (after any routing identity) into a Frame.

    Raises:
        ProtocolError: with ``code`` set to an ErrorCode (or ``bad_signature``) and the raw
            frames attached.
    """
    # The checks of a well-formed message inline (decode runs on every message at every hop);
    # anything else gets _first_frame's, which name what is wrong.
    # Typed bytes (a view is copied; frames read off a socket never are), so compiled the
    # slices and indexes below are bytes operations, not generic ones.
    first = frames[0] if 0 < len(frames) < 3 else b""
    if type(first) is bytes and first[:4] == SIGNATURE and len(first) >= PREFIX_BYTES:
        data: bytes = first
    else:
        data = bytes(_first_frame(frames))
    command = _BY_CODE.get(data[4])
    if command is None:
        raise ProtocolError(f"unknown command {data[4]}", code=ErrorCode.UNKNOWN_COMMAND,
                            frames=frames)
    # _PREFIX's uint32, big-endian
    length = (data[5] << 24) | (data[6] << 16) | (data[7] << 8) | data[8]
    if length > MAX_HEADER_BYTES:
        raise ProtocolError(f"header of {length} bytes exceeds {MAX_HEADER_BYTES}",
                            code=ErrorCode.TOO_LARGE, frames=frames)
    end = PREFIX_BYTES + length
    if end > len(data):
        raise ProtocolError(f"header length {length} runs past the end of a {len(data)}-byte frame",
                            code=ErrorCode.MALFORMED, frames=frames)
    if len(frames) == 2 and end != len(data):
        raise ProtocolError("a message with a body frame has bytes after its header",
                            code=ErrorCode.MALFORMED, frames=frames)
    try:
        # unpack(), without its call
        header = _unpackb(data[PREFIX_BYTES:end], raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ProtocolError(f"header is not msgpack: {exc}", code=ErrorCode.MALFORMED,
                            frames=frames) from exc
    if type(header) is not dict:
        raise ProtocolError("header is not a map", code=ErrorCode.MALFORMED, frames=frames)
    _check_header(command, header, frames)
    return Frame(command, header, frames[1] if len(frames) == 2 else data[end:], length)


def _first_frame(frames: list[Body]) -> Body:
    """The message frame, once its count, signature and version are right."""
    count = len(frames)
    data = frames[0] if count else b""
    if data[:3] != SIGNATURE_PREFIX or len(data) < 4:
        raise ProtocolError("unknown signature", code="bad_signature", frames=frames)
    # version 1 sent the signature alone, then 3 frames
    if data[3] != VERSION or (count > 2 and len(data) == 4):
        raise ProtocolError(f"protocol version {data[3]} is not supported: this side speaks "
                            f"version {VERSION} (one frame a message); run the same robotlab "
                            "version on both sides", code=ErrorCode.BAD_VERSION, frames=frames)
    if count not in (1, 2):
        raise ProtocolError(f"expected 1 frame (2 with a large body), got {count}",
                            code=ErrorCode.MALFORMED, frames=frames)
    if len(data) < PREFIX_BYTES:
        raise ProtocolError(f"truncated: {len(data)} bytes, the fixed start alone is "
                            f"{PREFIX_BYTES}", code=ErrorCode.MALFORMED, frames=frames)
    return data

