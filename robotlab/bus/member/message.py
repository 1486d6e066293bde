"""What a bus member receives: a Message, and for manual acking the Delivery around it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Message:
    """One inbound message.

    Attributes:
        id: the sender's id for it (unique per sender instance).
        sender: the sender's robot name, stamped by the broker (nobody can forge it).
        sender_instance: the sender's instance id; replies go back to exactly that process.
        to: the name it was addressed to.
        type: an application label ("message", "request", "reply", "task", ...).
        content: the payload, plain data.
        reply_to: the id of the message this one answers, if it is a reply.
        deadline: when the sender stops waiting (epoch seconds), if it said.
        attempt: 1 for the first delivery, more when redelivered.
        delivery: the broker's delivery id (what ACK/NACK name).
        body: the msgpack bytes ``content`` was unpacked from, as they arrived (a view of the
            received frame for a body of 64 KiB or more: never copied).
        effects_done: the idempotency keys of the side-effect calls earlier attempts reported
            done (:meth:`~robotlab.bus.member.client.BusClient.effect_done`), kept by the broker
            with the message: empty on a first attempt.
    """

    id: str
    sender: str
    sender_instance: str
    to: str
    type: str
    content: Any
    reply_to: str | None = None
    deadline: float | None = None
    attempt: int = 1
    delivery: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    body: bytes | memoryview = field(default=b"", repr=False, compare=False)
    effects_done: tuple[str, ...] = ()

    @property
    def is_reply(self) -> bool:
        """True when this message answers another."""
        return self.reply_to is not None

    @property
    def key(self) -> str:
        """``sender:id``, the form robots use for reply correlation."""
        return f"{self.sender}:{self.id}"


@dataclass
class Delivery:
    """A message handed to a manual (two-argument) handler, to be acked or nacked by hand.

    ``ack`` and ``nack`` settle it once; a second call raises ``RuntimeError`` naming the state,
    as the Ruby bus does.
    """

    message: Message
    _settle: Callable[[str, str], None]
    state: str = "pending"

    def ack(self) -> None:
        """Tell the broker the message was handled."""
        self._resolve("acked", "")

    def nack(self, reason: str = "") -> None:
        """Refuse the message; the sender is told ``nacked`` with ``reason``."""
        self._resolve("nacked", reason)

    @property
    def pending(self) -> bool:
        """True until acked or nacked."""
        return self.state == "pending"

    def _resolve(self, state: str, reason: str) -> None:
        if self.state != "pending":
            raise RuntimeError(f"Delivery already resolved as {self.state}")
        self.state = state
        self._settle(state, reason)
