"""What a bus member receives: a Message, and for manual acking the Delivery around it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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

    A message is immutable (:meth:`replace` makes a changed copy) and equal to another with the
    same fields, ``body`` aside: the same content may arrive in other bytes.
    """

    # A plain class, not a dataclass: every member imports this, and a handler-only one then
    # never imports dataclasses (nor inspect, dis and ast with it).

    __slots__ = __match_args__ = ("id", "sender", "sender_instance", "to", "type", "content",
                                  "reply_to", "deadline", "attempt", "delivery", "extra", "body",
                                  "effects_done")

    id: str
    sender: str
    sender_instance: str
    to: str
    type: str
    content: Any
    reply_to: str | None
    deadline: float | None
    attempt: int
    delivery: int
    extra: dict[str, Any]
    body: bytes | memoryview
    effects_done: tuple[str, ...]

    def __init__(self, id: str, sender: str, sender_instance: str, to: str, type: str,
                 content: Any, reply_to: str | None = None, deadline: float | None = None,
                 attempt: int = 1, delivery: int = 0, extra: dict[str, Any] | None = None,
                 body: bytes | memoryview = b"", effects_done: tuple[str, ...] = ()) -> None:
        set_field = object.__setattr__
        set_field(self, "id", id)
        set_field(self, "sender", sender)
        set_field(self, "sender_instance", sender_instance)
        set_field(self, "to", to)
        set_field(self, "type", type)
        set_field(self, "content", content)
        set_field(self, "reply_to", reply_to)
        set_field(self, "deadline", deadline)
        set_field(self, "attempt", attempt)
        set_field(self, "delivery", delivery)
        set_field(self, "extra", {} if extra is None else extra)
        set_field(self, "body", body)
        set_field(self, "effects_done", effects_done)

    @property
    def is_reply(self) -> bool:
        """True when this message answers another."""
        return self.reply_to is not None

    @property
    def key(self) -> str:
        """``sender:id``, the form robots use for reply correlation."""
        return f"{self.sender}:{self.id}"

    def replace(self, **changes: Any) -> Message:
        """A copy of this message with the fields named in ``changes`` set to their values.

        Raises:
            TypeError: a keyword names no field.
        """
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return self.__class__(**fields)

    def _compared(self) -> tuple[object, ...]:
        return (self.id, self.sender, self.sender_instance, self.to, self.type, self.content,
                self.reply_to, self.deadline, self.attempt, self.delivery, self.extra,
                self.effects_done)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Message) and other.__class__ is self.__class__:
            return self._compared() == other._compared()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._compared())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__
                          if name != "body")
        return f"Message({shown})"

    def __reduce__(self) -> tuple[Callable[..., Message], tuple[object, ...]]:
        return (self.__class__, tuple(getattr(self, name) for name in self.__slots__))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a Message is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a Message is immutable")


class Delivery:
    """A message handed to a manual (two-argument) handler, to be acked or nacked by hand.

    ``ack`` and ``nack`` settle it once; a second call raises ``RuntimeError`` naming the state,
    as the Ruby bus does.
    """

    __slots__ = __match_args__ = ("message", "_settle", "state")

    message: Message
    _settle: Callable[[str, str], None]
    state: str

    def __init__(self, message: Message, _settle: Callable[[str, str], None],
                 state: str = "pending") -> None:
        self.message = message
        self._settle = _settle
        self.state = state

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Delivery) and other.__class__ is self.__class__:
            return ((self.message, self._settle, self.state)
                    == (other.message, other._settle, other.state))
        return NotImplemented

    def __repr__(self) -> str:
        return (f"Delivery(message={self.message!r}, _settle={self._settle!r}, "
                f"state={self.state!r})")

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
