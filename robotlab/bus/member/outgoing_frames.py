"""What a client sends: a SEND's header, built from the sender's options or from the message a
reply answers, a reply's body, and the size check a packed body must pass.

A body is packed once: the bytes checked against the broker's limit are the bytes that go on
the wire (a large one in a frame of its own, sent by reference).
"""

from __future__ import annotations

from typing import Any, Final

from robotlab.errors import BusError

from ..wire import protocol
from ..wire.plain_data import pack_plain
from ..wire.protocol import Body, Command
from . import message_spans
from .dispatcher import Dispatcher
from .message import Message

SEND_OPTIONS: Final = ("any", "idempotent", "untracked", "to_instance", "reply_to", "ack",
                       "deadline", "max_handling")
"""The options of a SEND a sender may set, in the order :func:`send_header` takes their values."""
_REPLY_GIVEN: Final = ("type", "to", "to_instance", "reply_to")
"""The fields of a reply's header that come from elsewhere (its caller, the message it answers):
the only ones its check reads. Its id and flags are made here."""


def check_size(body: Body, limit: int) -> None:
    """Raise BusError when a packed body is larger than the broker accepts (``limit`` bytes)."""
    if len(body) > limit:
        raise BusError(f"message of {len(body)} bytes exceeds the broker's limit of {limit} bytes")


def reply_body(message: Message, content: Any) -> Body:
    """The packed body of a reply to ``message`` with ``content``: packed (BoundaryError if it
    cannot cross), except that the very bytes or str the message brought (an echo, a relay) go
    back in the body they came in, not packed again: immutable, so those bytes are still theirs.
    """
    if content is message.content and isinstance(content, (bytes, str)) and message.body:
        return message.body
    return pack_plain(content, "reply")


def send_header(message_id: str, to: str, type: str, options: tuple[Any, ...], receipt: bool,
                hold: float | None) -> dict[str, Any]:
    """The header of a SEND: ``options`` are the values of :data:`SEND_OPTIONS`, in its order, and
    go on the wire only when set (a request carries 1-2 of them, a reply 4), then ``receipt`` when
    False and ``hold`` when given."""
    header: dict[str, Any] = {"id": message_id, "to": to, "type": type}
    # indexes, not zip or (name, value) pairs: compiled, a tuple a field was most of the cost
    for i in range(len(SEND_OPTIONS)):
        value = options[i]
        if value:
            header[SEND_OPTIONS[i]] = value
    if not receipt:
        header["receipt"] = False
    if hold is not None:
        header["hold"] = hold
    return header


def reply_frames(message_id: str, message: Message, body: Body, type: str,
                 dispatcher: Dispatcher) -> list[Body]:
    """The frames of a reply to ``message``: to exactly the instance that sent it, fire and forget
    (``untracked``, no receipt), carrying the ack of its delivery when the ``dispatcher``'s
    :meth:`~robotlab.bus.member.dispatcher.Dispatcher.claim_reply` (which caches the reply) hands
    it over.

    The header is checked (ProtocolError, e.g. a ``type`` too long) before the ack is claimed: a
    reply that cannot go leaves its delivery to be nacked.
    """
    header: dict[str, Any] = {"id": message_id, "to": message.sender, "type": type}
    if message.sender_instance:
        header["to_instance"] = message.sender_instance
    header["reply_to"] = message.id
    header["untracked"] = True
    message_spans.stamp(header, _REPLY_GIVEN)  # checked as the broker will; traced when on
    ack = dispatcher.claim_reply(message, body, type)
    if ack:  # an int the broker gave this member (a checked DELIVER's delivery id)
        header["ack"] = ack
    header["receipt"] = False
    return protocol.encode(Command.SEND, header, body)


def resent(frames: list[Body]) -> list[Body]:
    """A SEND's frames again, its header marked ``again``: a broker that started since, or took
    over, may hold it for a member that had it before (its claims window,
    ``robotlab.broker.claims``), where a first send goes out at once."""
    frame = protocol.decode(frames)
    return protocol.encode(Command.SEND, {**frame.header, "again": True}, frame.body)
