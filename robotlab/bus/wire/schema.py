"""The vocabulary of the bus wire protocol: its commands and codes, and every header field's
type and bound (:data:`SCHEMA`), with the check :func:`robotlab.bus.wire.protocol.decode` runs.

Kept apart from the framing in :mod:`robotlab.bus.wire.protocol`, which re-exports every public
name here: read that module first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import IntEnum
from typing import Any, Final, NamedTuple

from robotlab.errors import ProtocolError


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

    BAD_VERSION: Final = "bad_version"
    MALFORMED: Final = "malformed"
    UNKNOWN_COMMAND: Final = "unknown_command"
    NOT_READY: Final = "not_ready"
    TOO_LARGE: Final = "too_large"
    BAD_HEADER: Final = "bad_header"
    FORBIDDEN: Final = "forbidden"
    CONFLICT: Final = "conflict"
    PASSIVE: Final = "passive"
    """The broker is the standby of a pair and not serving: try the next broker URL."""


class Status:
    """The fate of a sent message, as RECEIPT.status tells it."""

    DELIVERED: Final = "delivered"
    UNDELIVERABLE: Final = "undeliverable"
    NACKED: Final = "nacked"
    TIMEOUT: Final = "timeout"
    BUSY: Final = "busy"

    FAILURES: Final = frozenset({UNDELIVERABLE, NACKED, TIMEOUT, BUSY})


MAX_HEADER_BYTES: Final = 64 * 1024
"""Largest header frame decoded; larger ones are refused before msgpack sees them."""
NAME_MAX: Final = 128
"""Longest robot name, message type or admin op."""
ID_MAX: Final = 128
"""Longest message, instance or dead-letter id."""
TEXT_MAX: Final = 4096
"""Longest free text (a NACK reason, an error detail)."""
BATCH_MAX: Final = 4096
"""Most items in a list field (delivery ids of one ACK or TOUCH, instances of a receipt)."""
INT_MAX: Final = 2**63 - 1
EFFECTS_MAX: Final = 256
"""Most completed side-effect calls a message keeps (their idempotency keys, each at most
``ID_MAX`` characters)."""


class Field(NamedTuple):
    """The type and bounds of one header field. ``kind`` is one of the keys of ``_KINDS``."""

    # A named tuple, not a dataclass: every member imports this, and a handler-only one then
    # never imports dataclasses (nor inspect, dis and ast with it). Fields only sit in SCHEMA,
    # so being a tuple too changes nothing.

    kind: str
    required: bool = False
    limit: int = ID_MAX
    """Longest str, most list items, or most map entries."""

    def accepts(self, value: Any) -> bool:
        """True when ``value`` is of this field's kind and within its bounds."""
        return _KINDS[self.kind](value, self.limit)

    def describe(self) -> str:
        """The rule in words, for the error detail."""
        return _KIND_WORDS[self.kind].format(limit=self.limit)


def _is_int(value: Any, limit: int = 0) -> bool:
    return type(value) is int and 0 <= value <= INT_MAX


def _is_number(value: Any, limit: int = 0) -> bool:
    return (type(value) is float and math.isfinite(value)) or _is_int(value)


_KINDS: Final[dict[str, Callable[[Any, int], bool]]] = {
    "str": lambda v, n: type(v) is str and 0 < len(v) <= n,
    "text": lambda v, n: type(v) is str and len(v) <= n,
    "int": _is_int,
    "number": _is_number,
    "bool": lambda v, n: type(v) is bool,
    "ints": lambda v, n: type(v) is list and len(v) <= n and all(_is_int(i) for i in v),
    "strs": lambda v, n: (type(v) is list and len(v) <= n
                          and all(type(i) is str and len(i) <= ID_MAX for i in v)),
    "map": lambda v, n: type(v) is dict and len(v) <= n and all(type(k) is str for k in v),
    "any": lambda v, n: True,
}
_KIND_WORDS = {
    "str": "a non-empty string of at most {limit} characters",
    "text": "a string of at most {limit} characters",
    "int": "a non-negative integer",
    "number": "a finite non-negative number",
    "bool": "true or false",
    "ints": "a list of at most {limit} non-negative integers",
    "strs": "a list of at most {limit} strings",
    "map": "a map of at most {limit} string keys",
    "any": "anything",
}

_NAME = Field("str", limit=NAME_MAX)
_ID = Field("str")
_FLAG = Field("bool")
_SEND_FIELDS = {
    "id": Field("str", required=True), "to": Field("str", required=True, limit=NAME_MAX),
    "type": _NAME, "to_instance": _ID, "reply_to": _ID, "ack": Field("int"),
    "deadline": Field("number"), "max_handling": Field("number"),
    "any": _FLAG, "idempotent": _FLAG, "receipt": _FLAG, "untracked": _FLAG,
    "hold": Field("number"), "again": _FLAG,
    # W3C trace context (robotlab.observability)
    "traceparent": _ID, "tracestate": Field("text", limit=512),
}
SCHEMA: Final[dict[Command, dict[str, Field]]] = {
    Command.HELLO: {"name": Field("str", required=True, limit=NAME_MAX),
                    "instance": Field("str", required=True), "token": _ID, "role": _NAME,
                    "pid": Field("int"), "parent": _ID, "max_inflight": Field("int")},
    Command.SEND: _SEND_FIELDS,
    Command.ACK: {"deliveries": Field("ints", required=True, limit=BATCH_MAX)},
    Command.TOUCH: {"deliveries": Field("ints", required=True, limit=BATCH_MAX),
                    "effects": Field("strs", limit=EFFECTS_MAX)},
    Command.NACK: {"delivery": Field("int", required=True),
                   "reason": Field("text", limit=TEXT_MAX)},
    # its stats map is what robotlab.bus.member.heartbeat_stats sends
    Command.HEARTBEAT: {"seen": Field("int"), "stats": Field("map", limit=16)},
    Command.BYE: {},
    Command.REQUEST: {"id": Field("str", required=True),
                      "op": Field("str", required=True, limit=NAME_MAX),
                      "args": Field("map", limit=64)},
    Command.WELCOME: {"broker": _ID, "heartbeat": Field("number", required=True),
                      "liveness": Field("int", required=True), "ack_timeout": Field("number"),
                      "max_message_bytes": Field("int"), "version": Field("int")},
    Command.DELIVER: {**_SEND_FIELDS, "delivery": Field("int", required=True),
                      "from": Field("str", required=True, limit=NAME_MAX),
                      "from_instance": _ID, "attempt": Field("int"),
                      "effects_done": Field("strs", limit=EFFECTS_MAX)},
    Command.RECEIPT: {"id": Field("str", required=True),
                      "status": Field("str", required=True, limit=NAME_MAX),
                      "to": _NAME, "detail": Field("text", limit=TEXT_MAX), "dlq_id": _ID,
                      "instances": Field("strs", limit=BATCH_MAX)},
    Command.REPLY: {"id": Field("str", required=True), "ok": Field("bool", required=True),
                    "result": Field("any"), "error": Field("text", limit=TEXT_MAX)},
    Command.ERROR: {"code": Field("str", required=True, limit=NAME_MAX),
                    "detail": Field("text", limit=TEXT_MAX), "ref": _ID},
}
"""Every header field of every command: its kind, whether it is required, and its bound.

:func:`decode` checks each field named here and refuses the frame (``bad_header``) when one is
wrong, so no handler, settle path or routing table ever sees a field of the wrong type or
size. A field given as None counts as absent. Fields not named here travel untouched (newer
peers may add some) but nothing in robotlab reads them; the header frame as a whole is bounded
by ``MAX_HEADER_BYTES``.
"""

_STR: Final = 1
_INT: Final = 2
_OTHER: Final = 3
"""How :func:`_check_header` tests a field: the two common kinds inline, the rest by ``_fits``."""
_CHECKS: Final = {
    command: ({name: ({"str": _STR, "int": _INT}.get(spec.kind, _OTHER), spec.kind, spec.limit,
                      spec.required)
               for name, spec in fields.items()},
              sum(spec.required for spec in fields.values()))
    for command, fields in SCHEMA.items()}
"""Each command's fields as (how to test it, kind, limit, required), and how many are required."""
_REQUIRED: Final = {command: tuple(name for name, spec in fields.items() if spec.required)
                    for command, fields in SCHEMA.items()}


def check_header(command: Command, header: dict[str, Any]) -> None:
    """Check ``header`` against :data:`SCHEMA` as :func:`decode` will on the other side.

    Raises:
        ProtocolError: ``bad_header``, naming the field and what it must be.
    """
    _check_header(command, header, [])


def _check_header(command: Command, header: dict[str, Any], frames: list[Any]) -> None:
    # Walks the header's own fields (a SEND carries 4-6 of its 12), not the table's, and counts
    # the required ones it meets on the way: this runs on every frame at both ends, so it must
    # stay a few microseconds.
    fields, required = _CHECKS[command]
    nulls: list[str] | None = None
    for name, value in header.items():
        check = fields.get(name)
        if check is None:
            continue  # a field the table does not name: carried, never read
        test, kind, limit, needed = check
        if value is None:
            nulls = [*(nulls or ()), name]
            continue
        required -= needed
        if test == _STR:  # the common kinds inline: a call per field doubled the decode time
            if type(value) is not str or not 0 < len(value) <= limit:
                _refuse(command, header, name, value, frames)
        elif test == _INT:
            if type(value) is not int or not 0 <= value <= INT_MAX:
                _refuse(command, header, name, value, frames)
        elif not _fits(kind, limit, value):
            _refuse(command, header, name, value, frames)
    if nulls is not None or required:
        _absent(command, header, frames, nulls, required)


def _absent(command: Command, header: dict[str, Any], frames: list[Any], nulls: list[str] | None,
            required: int) -> None:
    """Drop the fields given as None; if ``required`` ones are missing, refuse the header."""
    for name in nulls or ():
        del header[name]  # an explicit None means "not given": one spelling downstream
    if required:  # one is missing: find which, to name it
        _check_required(command, header, frames)


def check_fields(command: Command, header: dict[str, Any], names: tuple[str, ...]) -> None:
    """Check only the fields ``names`` of ``header``: those that came from elsewhere, when the
    caller made the others itself (a reply's header: its ``type``, and what it copies from the
    message it answers). Raises ProtocolError as :func:`check_header` does."""
    fields = _CHECKS[command][0]
    for name in names:
        value = header.get(name)
        if value is not None:
            _, kind, limit, _ = fields[name]
            if not _fits(kind, limit, value):
                _refuse(command, header, name, value, [])


def _fits(kind: str, limit: int, value: Any) -> bool:
    # The common kinds without the table's lambdas: compiled, this is a native call and they are
    # not. (_check_header tests str and int inline before it gets here; check_fields comes
    # straight here.)
    if kind == "str":
        return type(value) is str and 0 < len(value) <= limit
    if kind == "bool":
        return type(value) is bool
    if kind == "number":
        return _is_number(value)
    return _KINDS[kind](value, limit)


def _check_required(command: Command, header: dict[str, Any], frames: list[Any]) -> None:
    for name in _REQUIRED[command]:
        if name not in header:
            problem = f"{command.name} header needs {name!r} ({SCHEMA[command][name].describe()})"
            raise ProtocolError(problem, code=ErrorCode.BAD_HEADER, frames=frames, ref=_ref(header))


def _refuse(command: Command, header: dict[str, Any], name: str, value: Any,
            frames: list[Any]) -> None:
    spec = SCHEMA[command][name]
    problem = f"{command.name} header field {name!r} must be {spec.describe()}, got {_show(value)}"
    raise ProtocolError(problem, code=ErrorCode.BAD_HEADER, frames=frames, ref=_ref(header))


def _ref(header: dict[str, Any]) -> str | None:
    """The header's id when it is a valid one, so the refusal can name the message it refuses."""
    value = header.get("id")
    return value if _KINDS["str"](value, ID_MAX) else None


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"
