"""Errors of the message bus: frames that do not parse, a broker out of reach, a message the
broker reports undelivered, a reply that never came."""

from __future__ import annotations

from typing import Any

from robotlab.errors.root import RobotlabError
from robotlab.exit_codes import ExitCode

__all__ = [
    "BusError",
    "Busy",
    "DeliveryFailed",
    "DeliveryTimeout",
    "Nacked",
    "PeerUnavailable",
    "ProtocolError",
    "ReplyTimeout",
    "StandbyConflict",
    "StandbyPassive",
    "Undeliverable",
    "delivery_error",
]


class BusError(RobotlabError):
    """The message bus failed."""

    exit_code: int = ExitCode.UNAVAILABLE


class ProtocolError(BusError):
    """Frames that do not parse. ``frames`` holds the raw frames for diagnosis; ``ref`` the
    message's id when the header was readable enough to name one."""

    exit_code: int = ExitCode.PROTOCOL

    def __init__(self, message: str, *, code: str = "malformed", frames: list[Any] | None = None,
                 ref: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.frames = frames or []
        self.ref = ref


class PeerUnavailable(BusError):
    """The broker could not be reached."""


class StandbyPassive(PeerUnavailable):
    """No broker welcomed us, and the one that answered is a passive standby: its peer is active
    (give both brokers' addresses), or has just gone and the standby is taking over. Either way
    trying again can succeed, so it exits 75 (try again), never 69."""

    exit_code: int = ExitCode.TEMPFAIL


class StandbyConflict(BusError):
    """Both brokers of a standby pair served clients: a primary heard nothing from its peer when
    it started and served alone, then heard its peer active. The primary stops, so that one
    broker serves the crew; started again it joins as passive, so it exits 75 (try again)."""

    exit_code: int = ExitCode.TEMPFAIL


class DeliveryFailed(BusError):
    """The broker reports that a message was not delivered.

    Attributes:
        reason: ``undeliverable``, ``nacked``, ``busy`` or ``timeout``.
        detail: the receiver's or broker's words.
        message_id: the id of the message that failed.
        dlq_id: its id in the dead-letter queue, when it went there.
    """

    reason = "failed"

    def __init__(
        self, detail: str = "", *, message_id: str = "", to: str = "", dlq_id: str | None = None
    ) -> None:
        text = f"message {message_id or '?'} to {to or '?'} {self.reason}"
        super().__init__(f"{text}: {detail}" if detail else text)
        self.detail = detail
        self.message_id = message_id
        self.to = to
        self.dlq_id = dlq_id


class Undeliverable(DeliveryFailed):
    """No live robot has the addressed name."""

    reason = "undeliverable"


class Nacked(DeliveryFailed):
    """The receiver refused the message."""

    reason = "nacked"


class Busy(DeliveryFailed):
    """The receiver already has its limit of deliveries in flight."""

    exit_code: int = ExitCode.TEMPFAIL
    reason = "busy"


class DeliveryTimeout(DeliveryFailed):
    """The receiver did not ack within the ack timeout."""

    exit_code: int = ExitCode.TEMPFAIL
    reason = "timeout"


class ReplyTimeout(BusError):
    """No reply came before the deadline. ``delivery`` says what became of the request."""

    exit_code: int = ExitCode.TEMPFAIL

    def __init__(self, message: str, *, delivery: str = "unknown") -> None:
        super().__init__(message)
        self.delivery = delivery


_DELIVERY_ERRORS: dict[str, type[DeliveryFailed]] = {
    "undeliverable": Undeliverable,
    "nacked": Nacked,
    "busy": Busy,
    "timeout": DeliveryTimeout,
}


def delivery_error(reason: str, detail: str = "", **fields: Any) -> DeliveryFailed:
    """Build the DeliveryFailed subclass for a broker's failure ``reason``."""
    cls = _DELIVERY_ERRORS.get(reason, DeliveryFailed)
    return cls(detail, **fields)
