"""What a client receives: where each frame the broker sends it goes, and the Message of a
checked DELIVER, its fields set in one step.

Compiled with the rest of the member's path (:mod:`robotlab.bus.native`): every frame a member
receives passes :meth:`Inbound.on_frame`, and a Message is built for every message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from ..wire import protocol
from ..wire.protocol import Body, Command, Frame
from . import message_spans
from .admin_calls import AdminCalls
from .dispatcher import Dispatcher
from .message import Message
from .outstanding import Outstanding

log = logging.getLogger("robotlab.bus")


class Inbound:
    """Routes what the broker sends a client, but for the frames about the connection (the
    :class:`~robotlab.bus.member.dialer.Dialer` acts on those): a DELIVER to the request waiting for
    it or to the dispatcher, a RECEIPT or an ERROR to what is outstanding, a REPLY to the admin
    call that asked."""

    def __init__(self, post: Callable[[list[Body]], bool], outstanding: Outstanding,
                 admin: AdminCalls, dispatcher: Dispatcher) -> None:
        self._post = post
        self._outstanding = outstanding
        self._admin = admin
        self._dispatcher = dispatcher

    def on_frame(self, frame: Frame) -> None:
        """Hand ``frame`` on to what waits for it, on the thread that read it."""
        handler = _FRAME_HANDLERS.get(frame.command)
        if handler is None:
            log.debug("bus: ignoring %s from the broker", frame.command.name)
            return
        handler(self, frame)

    def _on_deliver(self, frame: Frame) -> None:
        h = frame.header
        try:
            content = protocol.unpack(frame.body) if frame.body else None
        except Exception as exc:  # an undecodable payload is refused, not crashed on
            nack = {"delivery": h["delivery"], "reason": f"undecodable body: {exc}"}
            self._post(protocol.encode(Command.NACK, nack))
            return
        message = delivered(h, content, frame.body, message_spans.carried(h))
        if (message.reply_to is not None
                and self._outstanding.settle_reply(message, message.reply_to)):
            return
        self._dispatcher.submit(message)

    def _on_receipt(self, frame: Frame) -> None:
        self._outstanding.on_receipt(frame.header)

    def _on_reply(self, frame: Frame) -> None:
        self._admin.answered(frame.header, frame.body)

    def _on_error(self, frame: Frame) -> None:
        self._outstanding.on_error(frame.header)


_FRAME_HANDLERS: Final[dict[Command, Callable[[Inbound, Frame], None]]] = {
    Command.DELIVER: Inbound._on_deliver, Command.RECEIPT: Inbound._on_receipt,
    Command.REPLY: Inbound._on_reply, Command.ERROR: Inbound._on_error,
}


def delivered(header: dict[str, Any], content: Any, body: bytes | memoryview,
              extra: dict[str, Any]) -> Message:
    """The Message of a DELIVER whose ``header`` :func:`~robotlab.bus.wire.protocol.decode` has
    checked (every field has its type already), with its unpacked ``content`` and the ``body`` it
    came in."""
    done = header.get("effects_done")
    return Message(header["id"], header["from"], header.get("from_instance", ""),
                   header.get("to", ""), header.get("type", "message"), content,
                   header.get("reply_to"), header.get("deadline"), header.get("attempt", 1),
                   header["delivery"], extra, body, tuple(done) if done else ())
