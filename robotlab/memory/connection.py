"""The bus connection a remote memory talks through: requests out, the service's changes in.

A request's reply carries ``ok`` or an ``error``, raised here as the error the service raised.
The service pushes changes to this connection under the route a subscription was made with,
and the answer to a flush as ``flushed``; both arrive on the bus client's one handler thread,
in order, and go to the callback or the event registered under that route or token.
"""

from __future__ import annotations

import threading
import uuid
from typing import TYPE_CHECKING, Any

from robotlab import errors
from robotlab.memory.change import MemoryChange
from robotlab.memory.notify import Callback
from robotlab.memory.service import CHANGE_TYPE

if TYPE_CHECKING:
    from robotlab.bus import BusClient, Message

__all__ = ["ServiceConnection"]

_ERRORS: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "KeyError": KeyError,
    "AwaitTimeout": errors.AwaitTimeout,
    "BoundaryError": errors.BoundaryError,
    "DependencyError": errors.DependencyError,
    "InferenceError": errors.InferenceError,
}


class ServiceConnection:
    """A connection to the memory service ``service``.

    Args:
        client: a connected bus client of its own (this connection takes over its handler),
            or None to connect to :attr:`broker_url` on first use.
        service: the service's bus name (``memory/<network>``).
        owns_client: close ``client`` with this connection.
    """

    def __init__(self, client: BusClient | None, service: str, owns_client: bool = False) -> None:
        self.service_name = service
        self.broker_url: str | None = None
        """Where to connect on first use, when built without a client."""
        self.routes: dict[str, Callback] = {}
        """The callback each pushed change goes to, by the route its subscription was made with."""
        self.flushed: dict[str, threading.Event] = {}
        """The event each flush waits on, by its token."""
        self._client = client
        self._owns_client = owns_client
        self._lock = threading.Lock()
        if client is not None:
            client.on_message(self._on_message)

    @property
    def client(self) -> BusClient:
        """The bus client (connected now if it was not yet)."""
        with self._lock:
            if self._client is None:
                if self.broker_url is None:
                    raise errors.PeerUnavailable(f"the connection to {self.service_name} is closed")
                from robotlab import bus  # deferred: importing the memory API needs no ZeroMQ

                name = f"{self.service_name}/client-{uuid.uuid4().hex[:8]}"
                self._client = bus.connect(self.broker_url, name=name)
                self._client.on_message(self._on_message)
            return self._client

    def close(self) -> None:
        """Drop the connection; a later request raises ``PeerUnavailable``."""
        with self._lock:
            client, self._client, self.broker_url = self._client, None, None
        if self._owns_client and client is not None:
            client.close()

    def call(self, op: str, args: dict[str, Any], timeout: float) -> Any:
        """Ask the service to do ``op`` and return its ``ok``, or raise the error it raised."""
        reply = self.client.request(self.service_name, {"op": op, **args}, timeout=timeout)
        content = reply.content if isinstance(reply.content, dict) else {}
        if "error" in content:
            error = content["error"] or {}
            cls = _ERRORS.get(error.get("type", ""))
            message = str(error.get("message", ""))
            raise cls(message) if cls else errors.RemoteError(str(error.get("type")), message)
        return content.get("ok")

    def _on_message(self, message: Message) -> None:
        content = message.content if isinstance(message.content, dict) else {}
        if message.type != CHANGE_TYPE:
            return
        if "flushed" in content:
            event = self.flushed.get(content["flushed"])
            if event is not None:
                event.set()
            return
        callback = self.routes.get(content.get("route", ""))
        if callback is not None:
            callback(MemoryChange.from_dict(content["change"]))
