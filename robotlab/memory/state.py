"""The values behind the reserved memory keys: data, results, messages, session_id, cache."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["RESERVED_KEYS", "ReservedValues", "ResponseCache", "StateProxy"]


class StateProxy(dict):
    """The ``data`` reserved key: a dict whose keys also read and write as attributes.

    ``memory.data["category"] = "billing"`` and ``memory.data.category`` see the same value.
    A missing attribute raises ``AttributeError`` (a missing item, ``KeyError``), as in Ruby
    where an unknown method name is an error.
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy."""
        return dict(self)


class ResponseCache:
    """The ``cache`` reserved key: an exact-match cache of LLM answers keyed by prompt.

    The Ruby gem holds a semantic cache here (similar prompts hit); there is no such
    library in this port, so only identical keys hit. ``enable_cache=False`` leaves the
    reserved key ``None``.
    """

    def __init__(self) -> None:
        self._entries: dict[str, Any] = {}

    def fetch(self, key: str, compute: Callable[[], Any]) -> Any:
        """Return the cached value for ``key``, computing and storing it on a miss."""
        if key not in self._entries:
            self._entries[key] = compute()
        return self._entries[key]

    def get(self, key: str) -> Any:
        """The cached value for ``key``, or ``None``."""
        return self._entries.get(key)

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        self._entries[key] = value

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


RESERVED_KEYS: tuple[str, ...] = ("data", "results", "messages", "session_id", "cache")
"""Keys with their own accessors; they are never stored as plain values and never notify."""


class ReservedValues:
    """The values behind the reserved keys of one memory, behind their own lock."""

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        results: list[Any] | None = None,
        messages: list[Any] | None = None,
        session_id: str | None = None,
        enable_cache: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        self.data = StateProxy(data or {})
        self._results: list[Any] = list(results or [])
        self._messages: list[Any] = list(messages or [])
        self.session_id = session_id
        self.cache = ResponseCache() if enable_cache else None

    def read(self, key: str) -> Any:
        """The value of one reserved key; ``results`` and ``messages`` are copies."""
        if key == "results":
            return self.results()
        if key == "messages":
            return self.messages()
        return {"data": self.data, "session_id": self.session_id, "cache": self.cache}[key]

    def write(self, key: str, value: Any) -> None:
        """Replace one reserved value; the cache cannot be replaced.

        Raises:
            ValueError: for ``cache``.
        """
        if key == "cache":
            raise ValueError("Cannot reassign cache - it is initialized automatically")
        with self._lock:
            if key == "data":
                self.data = StateProxy(value or {})
            elif key == "results":
                self._results = list(value or [])
            elif key == "messages":
                self._messages = list(value or [])
            else:
                self.session_id = value

    def results(self, start: int = 0) -> list[Any]:
        """A copy of the results from index ``start`` on."""
        with self._lock:
            return list(self._results[start:])

    def messages(self) -> list[Any]:
        """A copy of the messages."""
        with self._lock:
            return list(self._messages)

    def append_result(self, result: Any) -> None:
        """Add one result."""
        with self._lock:
            self._results.append(result)

    def reset(self) -> None:
        """Empty every value but the cache handle."""
        with self._lock:
            self.data = StateProxy()
            self._results = []
            self._messages = []
            self.session_id = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data; results and messages that have ``to_dict`` are exported with it."""
        with self._lock:
            return {
                "data": dict(self.data),
                "results": [_export(r) for r in self._results],
                "messages": [_export(m) for m in self._messages],
                "session_id": self.session_id,
            }

    def copy(self) -> ReservedValues:
        """A deep copy of data, shallow copies of the lists, a fresh cache if there was one."""
        with self._lock:
            return ReservedValues(
                data=copy.deepcopy(dict(self.data)),
                results=list(self._results),
                messages=list(self._messages),
                session_id=self.session_id,
                enable_cache=self.cache is not None,
            )


def _export(item: Any) -> Any:
    to_dict = getattr(item, "to_dict", None)
    return to_dict() if callable(to_dict) else item
