"""Interruptible waits: retry backoff and decision polling return early on a signal."""

from __future__ import annotations

import threading


class Backoff:
    """Sleeps that a signal handler can cut short with ``interrupt()``.

    Args:
        base: seconds of the first retry wait; the n-th consecutive error waits
            ``base * 2**(n-1)`` (60, 120, 240... by default, i.e. 60·2ⁿ counted from 0).
    """

    def __init__(self, base: float = 60.0) -> None:
        self.base = base
        self._event = threading.Event()

    def delay(self, consecutive_errors: int, retry_after: float | None = None) -> float:
        """The wait before retry number ``consecutive_errors``; a provider's Retry-After wins."""
        if consecutive_errors <= 0:
            return 0.0
        if retry_after is not None and retry_after > 0:
            return float(retry_after)
        return self.base * 2 ** (consecutive_errors - 1)

    def sleep_for(self, consecutive_errors: int, retry_after: float | None = None) -> bool:
        """Wait before a retry; False when interrupted (a signal never clears)."""
        return not self._event.wait(self.delay(consecutive_errors, retry_after))

    def sleep_seconds(self, seconds: float) -> bool:
        """Wait ``seconds`` unless interrupted (an earlier interrupt still counts); False if so."""
        return not self._event.wait(max(seconds, 0.0))

    def interrupt(self) -> None:
        """End the current and every later ``sleep_seconds`` wait at once."""
        self._event.set()

    @property
    def interrupted(self) -> bool:
        """True once ``interrupt()`` was called."""
        return self._event.is_set()
