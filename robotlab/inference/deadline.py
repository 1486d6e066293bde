"""One deadline for a model call, its retries included, and the deadline a caller sets around work.

A bus message's sender waits only so long; robotd runs the robot inside ``within(seconds)``,
so every model call the robot makes meanwhile ends by then, however many rounds its tool loop
takes. The ambient deadline is a context variable: it follows the thread that runs the
robot and nothing else.
"""

from __future__ import annotations

import contextvars
import time
from contextlib import AbstractContextManager

__all__ = ["ambient", "seconds_left", "within"]

_AMBIENT: contextvars.ContextVar[float | None] = contextvars.ContextVar("robotlab_model_deadline",
                                                                       default=None)


def ambient() -> float | None:
    """The ``time.monotonic()`` by which the current work must end, None when nobody set one."""
    return _AMBIENT.get()


def within(seconds: float | None) -> AbstractContextManager[float | None]:
    """Every model call inside the block ends within ``seconds`` from now (None: no new bound).

    Nested blocks keep the sooner deadline, so an inner caller can shorten the bound, never
    stretch it. Yields the deadline in force (``time.monotonic()``), or None.
    """
    return _Within(seconds)


class _Within:
    """:func:`within`'s block. A class rather than a generator: a robot enters one for every
    bus message it handles, and a generator-based context manager costs three times as much."""

    __slots__ = ("seconds", "token")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds

    def __enter__(self) -> float | None:
        outer = _AMBIENT.get()
        at = outer if self.seconds is None else time.monotonic() + max(self.seconds, 0.0)
        if outer is not None and at is not None:
            at = min(at, outer)
        self.token = _AMBIENT.set(at)
        return at

    def __exit__(self, *exc_info: object) -> None:
        _AMBIENT.reset(self.token)


def seconds_left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (a ``time.monotonic()``), never below 0; None for no deadline."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)
