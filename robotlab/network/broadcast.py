"""A network's broadcast: one message to every handler, each on a thread of its own, and to memory.

``network.broadcast(payload)`` sends ``{"payload", "network", "timestamp"}`` to the handlers
given to ``network.on_broadcast`` and sets it under the memory key ``_network_broadcast``, so
memory subscribers in any process see it too. Handlers are fire-and-forget: one that raises
is logged and never reaches the sender or the other handlers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from robotlab.memory.memory import Memory

__all__ = ["BROADCAST_KEY", "Broadcast", "BroadcastHandler"]

# The network's own logger: a user filtering one network's messages gets these with the rest.
log = logging.getLogger("robotlab.network.network")

BROADCAST_KEY = "_network_broadcast"

BroadcastHandler = Callable[[dict[str, Any]], Any]


class Broadcast:
    """The broadcast handlers of one network."""

    def __init__(self) -> None:
        self._handlers: list[BroadcastHandler] = []

    def add(self, handler: BroadcastHandler | None) -> None:
        """Call ``handler(message)`` for every later :meth:`send`."""
        if handler is None:
            raise TypeError("on_broadcast() needs a handler")
        self._handlers.append(handler)

    def send(self, payload: Any, network_name: str, memory: Memory) -> None:
        """Start every handler on ``payload``, then set the message in ``memory``."""
        message = {"payload": payload, "network": network_name, "timestamp": time.time()}
        for handler in list(self._handlers):
            threading.Thread(target=_call_handler, args=(handler, message), daemon=True).start()
        memory.set(BROADCAST_KEY, message)


def _call_handler(handler: BroadcastHandler, message: dict[str, Any]) -> None:
    try:
        handler(message)
    except Exception:
        # Broadcast handlers are fire-and-forget (Ruby logs and goes on).
        log.exception("broadcast handler failed in network %r", message.get("network"))
