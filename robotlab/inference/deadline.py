"""One deadline for a model call, its retries included, and the deadline a caller sets around work.

A bus message's sender waits only so long; robotd runs the robot inside ``within(seconds)``,
so every model call the robot makes meanwhile ends by then, however many rounds its tool loop
takes. The ambient deadline is a context variable: it follows the thread that runs the
robot and nothing else.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ambient", "seconds_left", "within"]

_AMBIENT: contextvars.ContextVar[float | None] = contextvars.ContextVar("robotlab_model_deadline", default=None)


def ambient() -> float | None:
    """The ``time.monotonic()`` by which the current work must end, None when nobody set one."""
    return _AMBIENT.get()


@contextmanager
def within(seconds: float | None) -> Iterator[float | None]:
    """Every model call inside the block ends within ``seconds`` from now (None: no new bound).

    Nested blocks keep the sooner deadline, so an inner caller can shorten the bound, never
    stretch it. Yields the deadline in force (``time.monotonic()``), or None.
    """
    outer = _AMBIENT.get()
    at = outer if seconds is None else time.monotonic() + max(seconds, 0.0)
    if outer is not None and at is not None:
        at = min(at, outer)
    token = _AMBIENT.set(at)
    try:
        yield at
    finally:
        _AMBIENT.reset(token)


def seconds_left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (a ``time.monotonic()``), never below 0; None for no deadline."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)
