"""What a bus member receives: a Message, and for manual acking the Delivery around it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final

FIELDS: Final = ("id", "sender", "sender_instance", "to", "type", "content", "reply_to",
                 "deadline", "attempt", "delivery", "extra", "body", "effects_done")
"""A Message's fields, in its constructor's order."""


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
    # never imports dataclasses (nor inspect, dis and ast with it). Compiled with the bus
    # (robotlab/bus/native.py): the bus reads a message's fields on every delivery, and a
    # compiled class's read-only properties are native calls there, where a slot of an
    # interpreted class is a generic attribute lookup each time.

    __match_args__: ClassVar[tuple[str, ...]] = FIELDS

    def __init__(self, id: str, sender: str, sender_instance: str, to: str, type: str,
                 content: Any, reply_to: str | None = None, deadline: float | None = None,
                 attempt: int = 1, delivery: int = 0, extra: dict[str, Any] | None = None,
                 body: bytes | memoryview = b"", effects_done: tuple[str, ...] = ()) -> None:
        self._id: str = id
        self._sender: str = sender
        self._sender_instance: str = sender_instance
        self._to: str = to
        self._type: str = type
        self._content: Any = content
        self._reply_to: str | None = reply_to
        self._deadline: float | None = deadline
        self._attempt: int = attempt
        self._delivery: int = delivery
        self._extra: dict[str, Any] = {} if extra is None else extra
        self._body: bytes | memoryview = body
        self._effects_done: tuple[str, ...] = effects_done

    @property
    def id(self) -> str:
        return self._id

    @property
    def sender(self) -> str:
        return self._sender

    @property
    def sender_instance(self) -> str:
        return self._sender_instance

    @property
    def to(self) -> str:
        return self._to

    @property
    def type(self) -> str:
        return self._type

    @property
    def content(self) -> Any:
        return self._content

    @property
    def reply_to(self) -> str | None:
        return self._reply_to

    @property
    def deadline(self) -> float | None:
        return self._deadline

    @property
    def attempt(self) -> int:
        return self._attempt

    @property
    def delivery(self) -> int:
        return self._delivery

    @property
    def extra(self) -> dict[str, Any]:
        return self._extra

    @property
    def body(self) -> bytes | memoryview:
        return self._body

    @property
    def effects_done(self) -> tuple[str, ...]:
        return self._effects_done

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
        fields = {name: getattr(self, name) for name in FIELDS}
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
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in FIELDS
                          if name != "body")
        return f"Message({shown})"

    def __reduce__(self) -> tuple[Callable[..., Message], tuple[object, ...]]:
        return (self.__class__, tuple(getattr(self, name) for name in FIELDS))


class Delivery:
    """A message handed to a manual (two-argument) handler, to be acked or nacked by hand.

    ``ack`` and ``nack`` settle it once; a second call raises ``RuntimeError`` naming the state,
    as the Ruby bus does.
    """

    __match_args__: ClassVar[tuple[str, ...]] = ("message", "_settle", "state")

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
