"""A memory served on the bus, so members in other processes share it.

The memory stays where the network is (its process owns the data, the waiters and the
subscriptions); :class:`MemoryService` is a bus member named ``memory/<network>`` that answers
:class:`~robotlab.memory.remote.RemoteMemory` requests. Its handler runs on the bus client's
one dispatcher thread, so requests are applied one at a time in arrival order, and changes
reach remote subscribers through the memory's own ordered drainer: the changes to one key
arrive in the order they were made.

Requests are ``{"op": <name>, ...}``; replies are ``{"ok": <value>}`` or
``{"error": {"type", "message"}}`` (the remote side raises the same kind of error). Pushed to
subscribers: ``{"route": <id>, "change": <MemoryChange.to_dict()>}`` and, answering ``flush``,
``{"flushed": <token>}``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from robotlab.memory.change import MemoryChange
from robotlab.memory.memory import Memory

if TYPE_CHECKING:
    from robotlab.bus import BusClient, Message

__all__ = ["CHANGE_TYPE", "MemoryService", "service_name"]

log = logging.getLogger("robotlab.memory.memory")

CHANGE_TYPE = "memory.change"
"""Bus message type of what a memory service pushes to its subscribers."""


def service_name(network_name: str) -> str:
    """The bus name of a network's memory service."""
    return f"memory/{network_name}"


def plain(value: Any) -> Any:
    """A value as plain data: robot results (anything with ``to_dict``) are exported."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


class MemoryService:
    """Serves ``memory`` to the bus through ``client`` (whose inbound handler it takes over).

    Args:
        memory: the memory to share.
        client: a connected bus client, named after the service (see :func:`service_name`).
    """

    def __init__(self, memory: Memory, client: BusClient) -> None:
        self.memory = memory
        self.client = client
        self.name = client.name
        self._routes: dict[str, str] = {}
        client.on_message(self.handle)

    @classmethod
    def start(cls, memory: Memory, broker_url: str, name: str | None = None) -> MemoryService:
        """Connect a client for the service and start answering.

        Raises:
            PeerUnavailable: no broker at ``broker_url``.
        """
        from robotlab import bus  # the bus client is only needed once a memory is served

        name = name or service_name(memory.network_name or "memory")
        return cls(memory, bus.connect(broker_url, name=name))

    def close(self) -> None:
        """Leave the bus; remote members then get errors, never silence."""
        self.client.close()

    def handle(self, message: Message) -> dict[str, Any]:
        """Answer one request (called on the bus client's dispatcher thread)."""
        content = message.content if isinstance(message.content, dict) else {}
        op = _OPS.get(str(content.get("op")))
        if op is None:
            return {"error": {"type": "ValueError",
                              "message": f"unknown memory op {content.get('op')!r}"}}
        try:
            with self.memory.writing_as(content.get("writer")):
                return {"ok": plain(op(self, message, content))}
        except Exception as error:
            # The service is the boundary: the error goes back to the caller as data.
            return {"error": {"type": type(error).__name__, "message": str(error)}}

    # -- ops -------------------------------------------------------------------------------

    def _get(self, message: Message, args: dict[str, Any]) -> dict[str, Any]:
        memory = self.memory
        return {k: _reserved_plain(k, memory[k]) for k in args["keys"] if memory.has_key(k)}

    def _set(self, message: Message, args: dict[str, Any]) -> None:
        self.memory.set(args["key"], args.get("value"), correlation_id=args.get("correlation_id"))

    def _subscribe(self, message: Message, args: dict[str, Any]) -> str:
        push = self._pusher(message.sender, message.sender_instance, args["route"])
        if args.get("pattern") is not None:
            sub = self.memory.subscribe_pattern(args["pattern"], push)
        else:
            sub = self.memory.subscribe(*args["keys"], callback=push)
        self._routes[args["route"]] = sub
        return sub

    def _unsubscribe(self, message: Message, args: dict[str, Any]) -> bool:
        for route in [r for r, sub in self._routes.items() if sub == args["id"]]:
            del self._routes[route]
        return self.memory.unsubscribe(args["id"])

    def _watch(self, message: Message, args: dict[str, Any]) -> dict[str, Any]:
        # Subscribing before reading, both on this one thread, leaves no gap in which a
        # write could be missed by a remote reader about to wait.
        sub = self._subscribe(message, {"keys": [args["key"]], "route": args["route"]})
        present = self.memory.has_key(args["key"])
        return {"sub": sub, "present": present,
                "value": self.memory[args["key"]] if present else None}

    def _flush(self, message: Message, args: dict[str, Any]) -> bool:
        done = self.memory.flush(args.get("timeout", 5.0))
        self.client.send(message.sender, {"flushed": args["token"]}, type=CHANGE_TYPE,
                         to_instance=message.sender_instance)
        return done

    def _pusher(self, name: str, instance: str, route: str) -> Callable[[MemoryChange], None]:
        """A subscription callback that forwards each change to one remote subscriber.

        ``route`` is the subscriber's own id for the subscription, chosen before it is
        registered here, so even the first change finds its callback over there.
        """
        client = self.client
        last: list[Any] = []

        def push(change: MemoryChange) -> None:
            # Runs on the memory's drainer thread, in change order. A subscriber whose last
            # change could not be delivered has left the bus: its subscription goes too.
            if last and last[0].settled and last[0].failed:
                self.memory.unsubscribe(self._routes.pop(route, ""))
                return
            data = change.to_dict()
            data["value"], data["previous"] = plain(change.value), plain(change.previous)
            last[:] = [client.send(name, {"route": route, "change": data}, type=CHANGE_TYPE,
                                   to_instance=instance)]

        return push


def _reserved_plain(key: str, value: Any) -> Any:
    if key == "cache":
        return None  # the cache handle stays in its process; each side has its own
    if key == "data":
        return dict(value)
    return value


_Op = Callable[[MemoryService, Any, dict[str, Any]], Any]

_OPS: dict[str, _Op] = {
    "get": MemoryService._get,
    "set": MemoryService._set,
    "delete": lambda s, m, a: s.memory.delete(a["key"]),
    "has": lambda s, m, a: s.memory.has_key(a["key"]),
    "keys": lambda s, m, a: s.memory.keys(),
    "all_keys": lambda s, m, a: s.memory.all_keys(),
    "merge": lambda s, m, a: s.memory.merge(a["values"]) and None,
    "clear": lambda s, m, a: s.memory.clear() and None,
    "reset": lambda s, m, a: s.memory.reset() and None,
    "append_result": lambda s, m, a: s.memory.append_result(a["result"]) and None,
    "set_results": lambda s, m, a: s.memory.set_results(a["results"]) and None,
    "results_from": lambda s, m, a: s.memory.results_from(a["start"]),
    "to_dict": lambda s, m, a: s.memory.to_dict(),
    "subscribe": MemoryService._subscribe,
    "watch": MemoryService._watch,
    "unsubscribe": MemoryService._unsubscribe,
    "unsubscribe_keys": lambda s, m, a: s.memory.unsubscribe_keys(*a["keys"]),
    "subscribed": lambda s, m, a: s.memory.subscribed(a["key"]),
    "flush": MemoryService._flush,
    "store_document": lambda s, m, a: s.memory.store_document(a["key"], a["text"]),
    "search_documents": lambda s, m, a: s.memory.search_documents(a["query"], a.get("limit", 5)),
    "document_keys": lambda s, m, a: s.memory.document_keys(),
    "delete_document": lambda s, m, a: s.memory.delete_document(a["key"]),
}
"""Every request a memory service answers, by ``op``."""
