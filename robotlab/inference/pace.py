"""How long a model call may take when its caller names no time-out: sized from its output cap
and the token rate measured on the same model.

A fixed request time-out fits no model: 120 s cuts a 4,096-token story from a CPU model at
15 tokens/s, and waits minutes for a hosted model that died after its first second. Each
finished call records its output tokens per second; a later call then gets the time its
output cap needs at that rate, with a margin, plus an allowance for the prompt.
"""

from __future__ import annotations

import threading

__all__ = ["FIRST_CALL_SECONDS", "measured_rate", "record", "sized_timeout"]

FIRST_CALL_SECONDS = 120.0
"""A call's time-out before any call to its model has been measured (or with no output cap)."""
PROMPT_ALLOWANCE = 15.0
"""Seconds added for connecting and reading the prompt."""
MARGIN = 1.5
"""The output cap is given this many times the time the measured rate says it needs."""
SHORTEST = 30.0
"""No sized time-out is shorter than this: a rate measured on a short reply can flatter a model."""
_MIN_TOKENS = 16
"""Calls with fewer output tokens say more about latency than rate, and are not recorded."""

_rates: dict[str, float] = {}
_lock = threading.Lock()


def record(model: str, output_tokens: int, seconds: float) -> None:
    """Remember the rate of a finished call (a moving average, so one slow call moves it little)."""
    if output_tokens < _MIN_TOKENS or seconds <= 0:
        return
    rate = output_tokens / seconds
    with _lock:
        old = _rates.get(model)
        _rates[model] = rate if old is None else 0.7 * old + 0.3 * rate


def sized_timeout(model: str, max_tokens: int | None) -> float:
    """Seconds a call to ``model`` capped at ``max_tokens`` output tokens may take."""
    with _lock:
        rate = _rates.get(model)
    if rate is None or not max_tokens:
        return FIRST_CALL_SECONDS
    return max(SHORTEST, PROMPT_ALLOWANCE + MARGIN * max_tokens / rate)


def measured_rate(model: str) -> float | None:
    """Output tokens per second measured on ``model``, None before its first measured call."""
    with _lock:
        return _rates.get(model)
