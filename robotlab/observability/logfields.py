"""What a log line knows about where it comes from: the robot, its instance, the message in hand
and its trace, for the JSON log lines an operator searches (``robotd --log-format json``).

Two sources, both read by :func:`current` when a line is formatted:

- the process: a robotd hosts one robot, so every line it writes, its bus thread's included,
  is that robot's (:func:`about_process`, called once the daemon knows its instance);
- the message in hand: the bus's dispatcher sets :data:`HANDLING` while a handler runs, on
  whichever thread runs it (a context variable), so lines written meanwhile carry the
  message's id and those of other threads do not.

The trace id is the current span's while tracing is on (a handled message's ``process`` span
belongs to the sender's trace); with tracing off no trace id is known.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from . import tracing

FIELDS = ("robot", "instance", "message_id", "trace_id")
"""The keys :func:`current` may return, in the order a JSON line shows them."""

HANDLING: ContextVar[tuple[str, str, str] | None] = ContextVar("robotlab_handling", default=None)
"""(robot, instance, message id) of the message whose handler runs in this context, if any."""
# Process-wide on purpose: a process's log handler is process-wide too, and a robotd's bus
# thread logs on behalf of the one robot it hosts.
_process: dict[str, str] = {}


def about_process(**fields: str) -> None:
    """Name what every log line of this process is about (``robot=``, ``instance=``)."""
    _process.update({key: value for key, value in fields.items() if key in FIELDS and value})


def forget_process() -> None:
    """Forget what :func:`about_process` named (a fork server's warm-up robot, before it forks)."""
    _process.clear()


def current() -> dict[str, str]:
    """The fields known here and now (none of them when nothing is known)."""
    fields = dict(_process)
    in_hand = HANDLING.get()
    if in_hand is not None:
        fields["robot"], fields["instance"], fields["message_id"] = in_hand
    if tracing.ENABLED:
        trace_id = _trace_id()
        if trace_id:
            fields["trace_id"] = trace_id
    return fields


def _trace_id() -> str | None:
    from opentelemetry import trace

    context: Any = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else None
