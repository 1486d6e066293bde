"""RemoteMemory: a network's memory seen from another process, with the local API.

It talks to the network's :class:`~robotlab.memory.service.MemoryService` over its own bus
connection: reads and writes are requests, and subscriptions are changes the service pushes
to this connection, delivered to the callbacks on its one handler thread, in order.

A wait (``get(key, wait=...)``) subscribes to the key and reads it in one step on the
service, then waits here for the change; every second it asks the service again, so a lost
service shows up as an error (``Undeliverable``, ``ReplyTimeout``...), never as a silent hang.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from robotlab import errors
from robotlab.memory.api import Wait, WriterSlot, timeout_error
from robotlab.memory.connection import ServiceConnection
from robotlab.memory.notify import Callback
from robotlab.memory.state import ResponseCache, StateProxy

if TYPE_CHECKING:
    from robotlab.bus import BusClient

__all__ = ["LIVENESS_INTERVAL", "RemoteMemory"]

LIVENESS_INTERVAL = 1.0
"""Seconds between checks on the service while a remote read waits."""


class RemoteMemory(WriterSlot):
    """The memory served as ``service``, reached through ``client``.

    Args:
        client: a connected bus client of its own (this memory takes over its handler).
        service: the service's bus name (``memory/<network>``).
        network_name: the network's name.
        timeout: seconds to wait for each answer from the service.
        owns_client: close ``client`` with this memory.
    """

    def __init__(
        self,
        client: BusClient | None,
        service: str,
        network_name: str | None = None,
        timeout: float = 5.0,
        owns_client: bool = False,
    ) -> None:
        super().__init__()
        self.service_name = service
        self.network_name = network_name
        self.timeout = timeout
        self._connection = ServiceConnection(client, service, owns_client=owns_client)
        self._subs: dict[str, str] = {}
        self._cache = ResponseCache()

    @classmethod
    def connect(
        cls, broker_url: str, service: str, network_name: str | None = None, timeout: float = 5.0
    ) -> RemoteMemory:
        """A remote memory with a bus connection of its own, opened on first use (a member
        that never touches the memory never pays for it)."""
        memory = cls(None, service, network_name=network_name, timeout=timeout, owns_client=True)
        memory._connection.broker_url = broker_url
        return memory

    @property
    def client(self) -> BusClient:
        """The bus client this memory talks through (connected now if it was not yet)."""
        return self._connection.client

    def close(self) -> None:
        """Drop this connection (the memory itself lives on in the service)."""
        self._connection.close()

    def _call(self, op: str, **args: Any) -> Any:
        return self._connection.call(op, {"writer": self.current_writer, **args}, self.timeout)

    # -- reads and writes ------------------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        return self.get(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __contains__(self, key: object) -> bool:
        return self.has_key(str(key))

    def set(self, key: str, value: Any, *, writer: str | None = None,
            correlation_id: str | None = None) -> Any:
        """Store ``value`` in the shared memory (see :meth:`robotlab.memory.memory.Memory.set`)."""
        with self.writing_as(writer if writer is not None else self.current_writer):
            self._call("set", key=str(key), value=value, correlation_id=correlation_id)
        return value

    def get(self, *keys: str, wait: Wait = False) -> Any:
        """Read one key or several, optionally waiting.

        See :meth:`robotlab.memory.memory.Memory.get`.

        Raises:
            AwaitTimeout: a waited-for key was not set in time.
            BusError: the service cannot be reached (it is gone, or does not answer).
        """
        if not keys:
            raise TypeError("get() needs at least one key")
        names = [str(k) for k in keys]
        if wait is False or wait is None:
            found = self._call("get", keys=names)
            present = {k: _reserved(k, v, self._cache) for k, v in found.items()}
            return present.get(names[0]) if len(names) == 1 else present
        values = {k: self._await(k, wait) for k in names}
        return values[names[0]] if len(names) == 1 else values

    def _await(self, key: str, wait: float) -> Any:
        deadline = None if wait is True else time.monotonic() + max(0.0, float(wait))
        changed = threading.Event()
        route = uuid.uuid4().hex
        self._connection.routes[route] = lambda change: changed.set()
        try:
            answer = self._call("watch", key=key, route=route)
            self._subs[route] = answer["sub"]
            if answer["present"]:
                return _reserved(key, answer["value"], self._cache)
            return self._wait_for(key, wait, deadline, changed)
        finally:
            self._connection.routes.pop(route, None)
            self._drop_quietly(self._subs.pop(route, None))

    def _wait_for(self, key: str, wait: Wait, deadline: float | None,
                  changed: threading.Event) -> Any:
        while True:
            left = LIVENESS_INTERVAL if deadline is None else deadline - time.monotonic()
            changed.wait(max(0.0, min(left, LIVENESS_INTERVAL)))
            # Reading again after every slice also proves the service is alive: a lost
            # service raises here.
            present = self._call("get", keys=[key])
            if key in present:
                return _reserved(key, present[key], self._cache)
            if deadline is not None and time.monotonic() >= deadline:
                raise timeout_error(key, wait)

    def _drop_quietly(self, sub: str | None) -> None:
        if sub is None:
            return
        try:
            self._call("unsubscribe", id=sub)
        except errors.BusError:
            pass  # the service is gone, and its subscriptions with it

    def has_key(self, key: str) -> bool:
        """True when ``key`` is set or reserved."""
        return bool(self._call("has", key=str(key)))

    def keys(self) -> list[str]:
        """The keys set so far, reserved keys excluded."""
        return list(self._call("keys"))

    def all_keys(self) -> list[str]:
        """The reserved keys, then :meth:`keys`."""
        return list(self._call("all_keys"))

    def delete(self, key: str) -> Any:
        """Remove ``key`` and return its value (a reserved key raises ``ValueError``)."""
        return self._call("delete", key=str(key))

    def merge(self, values: dict[str, Any]) -> RemoteMemory:
        """Assign every pair (Ruby ``merge!``)."""
        self._call("merge", values=dict(values))
        return self

    def clear(self) -> RemoteMemory:
        """Delete every non-reserved key."""
        self._call("clear")
        return self

    def reset(self) -> RemoteMemory:
        """Empty the shared memory (subscriptions stay)."""
        self._call("reset")
        return self

    # -- reserved keys ---------------------------------------------------------------------

    @property
    def data(self) -> StateProxy:
        """A snapshot of ``data``; assign ``memory["data"] = {...}`` to change it."""
        return self.get("data")

    @property
    def results(self) -> list[Any]:
        """The results gathered so far, as plain dicts."""
        return self.get("results")

    @property
    def messages(self) -> list[Any]:
        """The conversation messages."""
        return self.get("messages")

    @property
    def session_id(self) -> str | None:
        """The conversation session identifier."""
        return self.get("session_id")

    @property
    def cache(self) -> ResponseCache:
        """This process's own response cache (a cache handle does not cross processes)."""
        return self._cache

    def append_result(self, result: Any) -> RemoteMemory:
        """Add one robot result (sent as plain data)."""
        to_dict = getattr(result, "to_dict", None)
        self._call("append_result", result=to_dict() if callable(to_dict) else result)
        return self

    def results_from(self, start: int) -> list[Any]:
        """The results from index ``start`` on."""
        return list(self._call("results_from", start=start))

    def to_dict(self) -> dict[str, Any]:
        """The shared memory as plain data."""
        return dict(self._call("to_dict"))

    # -- subscriptions ---------------------------------------------------------------------

    def subscribe(self, *keys: str, callback: Callback | None = None) -> str:
        """Call ``callback(change)`` here, on this connection's handler thread, for each change."""
        if callback is None:
            raise TypeError("subscribe() needs a callback")
        if not keys:
            raise TypeError("subscribe() needs at least one key")
        return self._add(callback, keys=[str(k) for k in keys])

    def subscribe_pattern(self, pattern: str, callback: Callback | None = None) -> str:
        """Call ``callback(change)`` for every key matching the anchored glob ``pattern``."""
        if callback is None:
            raise TypeError("subscribe_pattern() needs a callback")
        return self._add(callback, pattern=pattern)

    def _add(self, callback: Callback, **what: Any) -> str:
        route = uuid.uuid4().hex
        self._connection.routes[route] = callback
        try:
            sub = self._call("subscribe", route=route, **what)
        except Exception:
            self._connection.routes.pop(route, None)
            raise
        self._subs[route] = sub
        return sub

    def unsubscribe(self, subscription_id: str) -> bool:
        """Drop a subscription by id; False when there is none."""
        for route, sub in list(self._subs.items()):
            if sub == subscription_id:
                self._connection.routes.pop(route, None)
                self._subs.pop(route, None)
        return bool(self._call("unsubscribe", id=subscription_id))

    def unsubscribe_keys(self, *keys: str) -> None:
        """Stop exact-key subscriptions on ``keys`` (patterns are kept)."""
        self._call("unsubscribe_keys", keys=[str(k) for k in keys])

    def subscribed(self, key: str) -> bool:
        """True when a change to ``key`` would reach some subscriber (in any process)."""
        return bool(self._call("subscribed", key=str(key)))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every change made so far has reached this process's callbacks."""
        token = uuid.uuid4().hex
        event = self._connection.flushed[token] = threading.Event()
        try:
            self._call("flush", token=token, timeout=timeout or self.timeout)
            return event.wait(timeout if timeout is not None else self.timeout)
        finally:
            self._connection.flushed.pop(token, None)

    # -- documents: embedded and searched in the service's process ------------------------

    def store_document(self, key: str, text: str) -> None:
        """Embed ``text`` and keep it under ``key``, in the served memory's document store.

        Raises:
            DependencyError: the service's embedder's package is not installed there.
            InferenceError: the service's embedding provider failed.
        """
        self._call("store_document", key=str(key), text=str(text))

    def search_documents(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The stored documents nearest ``query``: ``[{"key", "text", "score"}]``, best first."""
        return list(self._call("search_documents", query=str(query), limit=int(limit)) or [])

    def document_keys(self) -> list[str]:
        """The keys of every stored document."""
        return list(self._call("document_keys") or [])

    def delete_document(self, key: str) -> bool:
        """Forget the document under ``key``; False when there was none."""
        return bool(self._call("delete_document", key=str(key)))

    def __repr__(self) -> str:
        return f"<RemoteMemory {self.service_name!r}>"


def _reserved(key: str, value: Any, cache: ResponseCache) -> Any:
    if key == "data":
        return StateProxy(value or {})
    if key == "cache":
        return cache
    return value

