"""Memory subscriptions and the drainer that delivers changes to them, in order.

``Memory.set`` snapshots the callbacks that match a key and pushes the change to a
:class:`Drainer`; one drainer thread per memory delivers every change in the order it was
made, then exits when the queue is empty (the Ruby gem's "coalescing drainer task"). A memory
nobody subscribes to never starts a thread.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from robotlab.memory.change import MemoryChange, compile_pattern

__all__ = ["Callback", "Drainer", "Subscriptions"]

log = logging.getLogger("robotlab.memory.memory")

Callback = Callable[[MemoryChange], Any]


@dataclass
class _Subscription:
    callback: Callback
    keys: set[str] = field(default_factory=set)
    pattern: re.Pattern[str] | None = None

    def matches(self, key: str) -> bool:
        if self.pattern is not None:
            return self.pattern.fullmatch(key) is not None
        return key in self.keys


class Subscriptions:
    """The subscriptions of one memory, by id. Safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: dict[str, _Subscription] = {}

    def add_keys(self, keys: Iterable[str], callback: Callback) -> str:
        """Subscribe ``callback`` to exact keys; returns the subscription id."""
        return self._add(_Subscription(callback, keys=set(keys)))

    def add_pattern(self, pattern: str, callback: Callback) -> str:
        """Subscribe ``callback`` to every key matching the glob ``pattern``."""
        return self._add(_Subscription(callback, pattern=compile_pattern(pattern)))

    def _add(self, sub: _Subscription) -> str:
        sub_id = str(uuid.uuid4())
        with self._lock:
            self._subs[sub_id] = sub
        return sub_id

    def remove(self, sub_id: str) -> bool:
        """Drop one subscription; False when the id is unknown."""
        with self._lock:
            return self._subs.pop(sub_id, None) is not None

    def remove_keys(self, keys: Iterable[str]) -> None:
        """Stop exact-key subscriptions on ``keys``; one left with no key is dropped."""
        gone = set(keys)
        with self._lock:
            for sub_id, sub in list(self._subs.items()):
                if sub.pattern is None:
                    sub.keys -= gone
                    if not sub.keys:
                        del self._subs[sub_id]

    def covers(self, key: str) -> bool:
        """True when some subscription (exact or pattern) would be told about ``key``."""
        with self._lock:
            return any(sub.matches(key) for sub in self._subs.values())

    def matching(self, key: str) -> list[Callback]:
        """The callbacks to tell about a change to ``key``, in subscription order."""
        with self._lock:
            return [sub.callback for sub in self._subs.values() if sub.matches(key)]

    def clear(self) -> None:
        """Drop every subscription."""
        with self._lock:
            self._subs.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._subs)


class Drainer:
    """Delivers changes to their callbacks on one thread, in the order they were pushed.

    A callback that raises is logged and skipped: a subscriber can never break the writer
    or the other subscribers.
    """

    def __init__(self, name: str = "memory") -> None:
        self._name = name
        self._cond = threading.Condition()
        self._queue: deque[tuple[MemoryChange, list[Callback]]] = deque()
        self._running = False

    def push(self, change: MemoryChange, callbacks: list[Callback]) -> None:
        """Queue ``change`` for ``callbacks``; starts the drainer thread if it is idle."""
        if not callbacks:
            return
        with self._cond:
            self._queue.append((change, callbacks))
            if self._running:
                return
            self._running = True
        threading.Thread(target=self._drain, name=f"{self._name}-drainer", daemon=True).start()

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every queued change was delivered; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._running, timeout)

    def _drain(self) -> None:
        while True:
            with self._cond:
                if not self._queue:
                    self._running = False
                    self._cond.notify_all()
                    return
                change, callbacks = self._queue.popleft()
            for callback in callbacks:
                self._deliver(callback, change)

    @staticmethod
    def _deliver(callback: Callback, change: MemoryChange) -> None:
        try:
            callback(change)
        except Exception:
            # The drainer is the boundary for subscriber code: log and go on.
            log.exception("memory subscriber failed on key %r", change.key)
