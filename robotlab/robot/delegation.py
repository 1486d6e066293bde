"""Delegation: one robot hands a task to another, waiting for it or getting a future."""

from __future__ import annotations

import threading
import time
from typing import Any

from robotlab.errors import DelegationTimeout

__all__ = ["DelegationFuture", "delegate"]


class DelegationFuture:
    """The pending result of an asynchronous delegation."""

    def __init__(self, robot_name: str, delegated_by: str) -> None:
        self.robot_name = robot_name
        self.delegated_by = delegated_by
        self._settled = threading.Event()
        self._result: Any = None
        self._error: BaseException | None = None

    def resolved(self) -> bool:
        """True once the delegatee finished, successfully or not."""
        return self._settled.is_set()

    def resolve(self, result: Any) -> None:
        """Settle with a result (settling again overwrites the outcome)."""
        self._result, self._error = result, None
        self._settled.set()

    def reject(self, error: BaseException) -> None:
        """Settle with an error."""
        self._result, self._error = None, error
        self._settled.set()

    def value(self, timeout: float | None = None) -> Any:
        """Wait for the result; the delegatee's error is raised on every call.

        Raises:
            DelegationTimeout: not settled within ``timeout`` seconds.
        """
        if not self._settled.wait(timeout):
            raise DelegationTimeout(f"Delegation to '{self.robot_name}' timed out after {timeout}s")
        if self._error is not None:
            raise self._error
        return self._result

    wait = value


def _run(manager: Any, to: Any, task: Any, kwargs: dict[str, Any]) -> Any:
    started = time.monotonic()
    result = to.run(task, **kwargs)
    if result is not None:
        result.duration = time.monotonic() - started
        result.delegated_by = manager.name
    return result


def delegate(manager: Any, to: Any, task: Any, *, async_: bool = False, **kwargs: Any) -> Any:
    """Run ``task`` on robot ``to`` for ``manager``: the result, or a future when ``async_``."""
    if not async_:
        return _run(manager, to, task, kwargs)
    future = DelegationFuture(to.name, manager.name)

    def work() -> None:
        try:
            future.resolve(_run(manager, to, task, kwargs))
        except Exception as exc:  # the future carries it to whoever waits
            future.reject(exc)

    threading.Thread(target=work, name=f"delegate-{to.name}", daemon=True).start()
    return future
