"""The one place tests may wait: poll a condition instead of sleeping a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(predicate: Callable[[], Any], timeout: float = 5.0, message: str = "") -> Any:
    """Poll ``predicate`` every 10 ms until it returns something truthy, and return that.

    Raises:
        AssertionError: on timeout, with ``message`` and the last value seen.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"{message or 'condition'} not met in {timeout}s; last value: {value!r}")
        time.sleep(0.01)
