"""What each command a member sends does, once the broker has read it and found its peer: the
command table the loop dispatches through (HELLO's admission is in ``admission.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from time import monotonic
from typing import Protocol

from robotlab.bus.wire.protocol import Command, ErrorCode, Frame

from .admin import Admin
from .admission import Hall, admit
from .member_stats import on_heartbeat
from .outbox import Outbox
from .registry import Peer
from .traffic import Traffic

Handler = Callable[[bytes, Peer, Frame], None]


class Host(Hall, Protocol):
    """What the commands use of the broker (``Broker`` is one); a protocol, so no import cycle."""

    outbox: Outbox
    admin: Admin
    traffic: Traffic


class Commands:
    """The handler of each command a member sends; made once the broker's collaborators are."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.config = host.config
        self.deliveries = host.deliveries
        self.table: dict[Command, Handler] = {
            Command.HELLO: self.on_hello,
            Command.SEND: self.on_send,
            Command.ACK: self.on_ack,
            Command.NACK: self.on_nack,
            Command.TOUCH: self.on_touch,
            Command.HEARTBEAT: on_heartbeat,
            Command.BYE: self.on_bye,
            Command.REQUEST: self.on_request,
        }

    def on_hello(self, identity: bytes, peer: Peer | None, frame: Frame) -> None:
        """HELLO {name, instance, token?, role, pid, parent?, max_inflight?} -> WELCOME.

        Refused with ``forbidden`` when the key may not use the name, with ``passive`` by a
        standby whose peer is live, and with ``conflict`` when another live connection holds
        the instance. A second HELLO on one connection replaces its earlier registration
        (:func:`robotlab.broker.admission.admit`).
        """
        admit(self.host, identity, peer, frame)

    def on_send(self, identity: bytes, peer: Peer, frame: Frame) -> None:
        """SEND {id, to, type, ...} + body -> DELIVER to the targets; RECEIPT back later."""
        h = frame.header
        ack = h.pop("ack", None)
        peer.unconfirmed = peer.unconfirmed or bool(h.get("untracked"))
        if len(frame.body) > self.config.max_message_bytes:
            if isinstance(ack, int):  # the request was handled: only its reply is refused
                self.deliveries.ack(peer, ack, reply=h)
            self.host._error(identity, ErrorCode.TOO_LARGE,
                             f"body of {len(frame.body)} bytes exceeds "
                             f"{self.config.max_message_bytes}", frame)
            return
        h["from"] = peer.name  # stamped here: no robot can speak as another
        h["from_instance"] = peer.instance
        h.setdefault("type", "message")
        if isinstance(ack, int) and self.deliveries.written_for(peer, ack):
            # Its request is in the journal's file: settled first, and the reply leaves with
            # the commit that deletes it, so a reply its sender has never leaves it open.
            self.host.traffic.seen(h, len(frame.body))
            self.deliveries.ack(peer, ack, reply=h)
            body, notify, size = frame.body, peer.instance, frame.header_bytes
            self.host.outbox.after_commit(
                lambda: self.deliveries.route(h, body, notify=notify, header_bytes=size))
            return
        self.deliveries.route(h, frame.body, notify=peer.instance, header_bytes=frame.header_bytes)
        # What is not on the message's way on comes after its DELIVER left: the traffic ring,
        # and a reply's ack (settling is not on its way back).
        self.host.traffic.seen(h, len(frame.body))
        if isinstance(ack, int):
            self.deliveries.ack(peer, ack, reply=h)

    def on_ack(self, identity: bytes, peer: Peer, frame: Frame) -> None:
        """ACK {deliveries: [ids]}: settle each as delivered."""
        peer.unconfirmed = True
        for delivery_id in frame.header["deliveries"]:
            if isinstance(delivery_id, int):
                self.deliveries.ack(peer, delivery_id)

    def on_nack(self, identity: bytes, peer: Peer, frame: Frame) -> None:
        """NACK {delivery, reason}: settle as refused (retried first when idempotent)."""
        peer.unconfirmed = True
        self.deliveries.nack(peer, frame.header["delivery"], str(frame.header.get("reason", "")))

    def on_touch(self, identity: bytes, peer: Peer, frame: Frame) -> None:
        """TOUCH {deliveries: [ids], effects?: [keys]}: the peer is still working on these; push
        their deadlines. ``effects``: side-effect calls completed on the one delivery named."""
        h = frame.header
        self.deliveries.touch(peer, h["deliveries"], monotonic(), time.time())
        if h.get("effects") and len(h["deliveries"]) == 1:
            self.deliveries.effects_done(peer, h["deliveries"][0], h["effects"])

    def on_bye(self, identity: bytes, peer: Peer, frame: Frame) -> None:
        """BYE {}: the peer leaves; what it had in flight fails over or is dead-lettered."""
        self.host._forget(peer, "left", gone=True)

    def on_request(self, identity: bytes, peer: Peer, frame: Frame) -> None:
        """REQUEST {id, op, args} -> REPLY {id, ok, result | error}, a large result in the body."""
        self.host.outbox.add(peer, Command.REPLY, *self.host.admin.answer(peer, frame.header))
