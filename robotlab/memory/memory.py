"""Memory: the reactive key-value store robots and networks share (spec section 22).

A ``Memory`` lives in one process. ``robotlab/memory/remote.py`` gives members in other
processes the same API over the bus; both satisfy :class:`MemoryStore`, which is what robots
and networks are typed against (``api.py``). Companions: ``change.py`` (the change record and
glob patterns), ``notify.py`` (subscriptions and the ordered drainer), ``state.py`` (the
reserved keys' values) and ``reserved.py`` (those values as attributes: ``data``,
``results``...). ``docs/memory.md`` maps the Ruby names to the Python ones.

Guarantees: ``set`` wakes blocked readers before it returns; subscribers are told afterwards,
on one drainer thread, in the order the writes were made; a subscriber that raises is logged
and never reaches the writer.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Mapping
from typing import Any

from robotlab.memory.api import MemoryStore, Wait, WriterSlot, timeout_error
from robotlab.memory.change import MemoryChange
from robotlab.memory.documents import DocumentMethods, Embedder
from robotlab.memory.notify import Callback, Drainer, Subscriptions
from robotlab.memory.reserved import ReservedKeyMethods
from robotlab.memory.state import RESERVED_KEYS, ReservedValues

__all__ = [
    "RESERVED_KEYS",
    "Memory",
    "MemoryChange",
    "MemoryStore",
    "create_memory",
]


def _key(key: Any) -> str:
    return key if isinstance(key, str) else str(key)


class Memory(ReservedKeyMethods, DocumentMethods, WriterSlot):
    """A reactive key-value store in this process.

    Args:
        data: initial content of the ``data`` reserved key.
        results: robot results already gathered.
        messages: conversation messages already gathered.
        session_id: conversation session identifier.
        enable_cache: hold a :class:`ResponseCache` under ``cache`` (else ``None``).
        network_name: the owning network's name, stamped on every :class:`MemoryChange`.
        embedder: what embeds documents (``store_document``); default ``LocalEmbedder``.
        document_path: a directory whose ``documents.sqlite3`` holds the documents, shared
            with every process that names it; None keeps them in this process.
    """

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        results: list[Any] | None = None,
        messages: list[Any] | None = None,
        session_id: str | None = None,
        enable_cache: bool = True,
        network_name: str | None = None,
        embedder: Embedder | None = None,
        document_path: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__()
        self.network_name = network_name
        self.embedder = embedder
        self.document_path = document_path
        self._cond = threading.Condition(threading.Lock())
        self._values: dict[str, Any] = {}
        self._reserved = ReservedValues(data, results, messages, session_id, enable_cache)
        self._subs = Subscriptions()
        self._drainer = Drainer(f"memory-{network_name or 'robot'}")

    # -- reads and writes ------------------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        key = _key(key)
        if key in RESERVED_KEYS:
            return self._reserved.read(key)
        with self._cond:
            return self._values.get(key)

    def __setitem__(self, key: str, value: Any) -> None:
        key = _key(key)
        if key in RESERVED_KEYS:
            self._reserved.write(key, value)
        else:
            self.set(key, value)

    def __contains__(self, key: object) -> bool:
        return self.has_key(_key(key))

    def set(
        self, key: str, value: Any, *, writer: str | None = None, correlation_id: str | None = None
    ) -> Any:
        """Store ``value`` (``None`` included), wake readers waiting on ``key``, notify subscribers.

        A reserved key is set as ``memory[key] = value`` would: silently. ``writer`` overrides
        :attr:`current_writer` (a memory service passes the remote member's name here).

        Returns:
            ``value``.
        """
        key = _key(key)
        if key in RESERVED_KEYS:
            self._reserved.write(key, value)
            return value
        writer = self.current_writer if writer is None else writer
        with self._cond:
            previous = self._values.get(key)
            self._values[key] = value
            self._cond.notify_all()
            self._notify(key, value, previous, writer, correlation_id)
        return value

    def _notify(
        self, key: str, value: Any, previous: Any, writer: str | None, correlation_id: str | None
    ) -> None:
        # Called with the lock held, so changes enter the drainer in write order.
        callbacks = self._subs.matching(key)
        if callbacks:
            change = MemoryChange(
                key=key,
                value=value,
                previous=previous,
                writer=writer,
                network_name=self.network_name,
                correlation_id=correlation_id,
            )
            self._drainer.push(change, callbacks)

    def get(self, *keys: str, wait: Wait = False) -> Any:
        """Read one key (its value) or several (a dict).

        Args:
            *keys: one or more keys.
            wait: ``False`` reads what is there: a missing single key gives ``None``, and
                several keys give a dict of the present ones only. ``True`` blocks until every
                key is set. A number blocks up to that many seconds for each missing key in
                turn.

        Raises:
            AwaitTimeout: ``"Timeout waiting for :<key> after N seconds"``.
        """
        if not keys:
            raise TypeError("get() needs at least one key")
        names = [_key(k) for k in keys]
        if wait is False or wait is None:
            if len(names) == 1:
                return self[names[0]]
            return {k: self[k] for k in names if self.has_key(k)}
        values = {k: self._await(k, wait) for k in names}
        return values[names[0]] if len(names) == 1 else values

    def _await(self, key: str, wait: float) -> Any:
        if key in RESERVED_KEYS:
            return self._reserved.read(key)
        timeout = None if wait is True else max(0.0, float(wait))
        with self._cond:
            if not self._cond.wait_for(lambda: key in self._values, timeout):
                raise timeout_error(key, wait)
            return self._values[key]

    def has_key(self, key: str) -> bool:
        """True when ``key`` is set (even to ``None``) or is reserved (Ruby ``key?``)."""
        key = _key(key)
        if key in RESERVED_KEYS:
            return True
        with self._cond:
            return key in self._values

    def keys(self) -> list[str]:
        """The keys set so far, reserved keys excluded."""
        with self._cond:
            return list(self._values)

    def all_keys(self) -> list[str]:
        """The reserved keys, then :meth:`keys`."""
        return [*RESERVED_KEYS, *self.keys()]

    def merge(self, values: Mapping[str, Any]) -> Memory:
        """Assign every pair as ``memory[k] = v`` would (Ruby ``merge!``); returns self."""
        for key, value in values.items():
            self[key] = value
        return self

    def delete(self, key: str) -> Any:
        """Remove ``key`` and return its value; subscribers see a deleted change.

        Raises:
            ValueError: for a reserved key.
        """
        key = _key(key)
        if key in RESERVED_KEYS:
            raise ValueError(f"Cannot delete reserved key: {key}")
        writer = self.current_writer
        with self._cond:
            if key not in self._values:
                return None
            previous = self._values.pop(key)
            self._notify(key, None, previous, writer, None)
        return previous

    def clear(self) -> Memory:
        """Delete every non-reserved key (each one notifies as :meth:`delete` does)."""
        for key in self.keys():
            self.delete(key)
        return self

    def reset(self) -> Memory:
        """Back to an empty memory: no keys, empty reserved values, the same cache handle.

        Subscriptions stay; nothing is notified.
        """
        with self._cond:
            self._values.clear()
        self._reserved.reset()
        return self

    # -- subscriptions ---------------------------------------------------------------------

    def subscribe(self, *keys: str, callback: Callback | None = None) -> str:
        """Call ``callback(change)`` after each change to any of ``keys``; returns an id."""
        if callback is None:
            raise TypeError("subscribe() needs a callback")
        if not keys:
            raise TypeError("subscribe() needs at least one key")
        return self._subs.add_keys((_key(k) for k in keys), callback)

    def subscribe_pattern(self, pattern: str, callback: Callback | None = None) -> str:
        """Call ``callback(change)`` for every key matching the anchored glob ``pattern``."""
        if callback is None:
            raise TypeError("subscribe_pattern() needs a callback")
        return self._subs.add_pattern(pattern, callback)

    def unsubscribe(self, subscription_id: str) -> bool:
        """Drop a subscription by id; False when there is none."""
        return self._subs.remove(subscription_id)

    def unsubscribe_keys(self, *keys: str) -> None:
        """Stop telling exact-key subscriptions about ``keys`` (patterns are kept)."""
        self._subs.remove_keys(_key(k) for k in keys)

    def subscribed(self, key: str) -> bool:
        """True when a change to ``key`` would reach some subscriber (Ruby ``subscribed?``)."""
        return self._subs.covers(_key(key))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every change made so far has reached its subscribers; False on timeout."""
        return self._drainer.flush(timeout)

    # -- copies and plain data -------------------------------------------------------------

    def clone(self) -> Memory:
        """A deep copy with the same content and settings, and no subscriptions."""
        twin = Memory(network_name=self.network_name)
        twin._reserved = self._reserved.copy()
        with self._cond:
            twin._values = copy.deepcopy(self._values)
        return twin

    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``data``, ``results``, ``messages``, ``session_id``, ``custom``.

        Results that have ``to_dict`` are exported with it; the cache is not saved.
        """
        out = self._reserved.to_dict()
        with self._cond:
            out["custom"] = dict(self._values)
        return {k: v for k, v in out.items() if v is not None}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON (values JSON cannot hold are written with ``str``)."""
        return json.dumps(self.to_dict(), default=str)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **opts: Any) -> Memory:
        """Rebuild a memory from :meth:`to_dict` output (results stay plain dicts)."""
        memory = cls(
            data=data.get("data") or {},
            results=list(data.get("results") or []),
            messages=list(data.get("messages") or []),
            session_id=data.get("session_id"),
            **opts,
        )
        with memory._cond:
            memory._values.update(data.get("custom") or {})
        return memory

    def __repr__(self) -> str:
        return f"<Memory network={self.network_name!r} keys={self.keys()!r}>"


def create_memory(data: Mapping[str, Any] | None = None, **opts: Any) -> Memory:
    """Build a :class:`Memory` (Ruby ``RobotLab.create_memory``); ``opts`` go to its constructor."""
    return Memory(data=data, **opts)
