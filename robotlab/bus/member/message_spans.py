"""The bus's share of tracing.

A SEND's header gets its span context, a delivery its ``process`` span.

Each function checks ``tracing.ENABLED`` once and is a plain pass-through when it is False
(see :mod:`robotlab.observability.tracing`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from robotlab.observability import tracing

from ..wire import protocol
from ..wire.protocol import Command
from .message import Message


def stamp(header: dict[str, Any], given: tuple[str, ...] | None = None) -> None:
    """Check a SEND header as the broker will (ProtocolError if it would refuse it), after adding
    the ``send`` span's trace context when tracing is on. With ``given``, only those fields are
    checked: the caller made the others itself (see :func:`protocol.check_fields`)."""
    if tracing.ENABLED:
        from robotlab.observability import spans

        spans.sent(header)
    if given is None:
        protocol.check_header(Command.SEND, header)
    else:
        protocol.check_fields(Command.SEND, header, given)


def carried(header: dict[str, Any]) -> dict[str, Any]:
    """The trace fields of a DELIVER header (none while off).

    They are kept in ``Message.extra`` for :func:`handle`.

    Asks ``tracing.ENABLED`` here, compiled, rather than calling into the interpreted module on
    every message while tracing is off."""
    return tracing.carried(header) if tracing.ENABLED else {}


def traced() -> bool:
    """True while tracing is on: then a handler runs through :func:`handle`, in its span; else
    its caller may call it directly (compiled, a native call instead of a generic one)."""
    return tracing.ENABLED


def handle(name: str, message: Message, handler: Callable[[Message], None]) -> None:
    """Run ``handler(message)``, inside a ``process {name}`` span when tracing is on."""
    if not tracing.ENABLED:
        handler(message)
        return
    from robotlab.observability import spans

    with spans.processing(name, message):
        handler(message)
