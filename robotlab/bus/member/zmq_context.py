"""A member's own ZeroMQ context: ended once its sockets have sent what they queued.

ZeroMQ sends from a thread of its own. A frame sent just before the process exits (the reply
of a step drained on SIGTERM, then BYE) may still be queued there, and is lost with the
process: the process's shared context is never ended, since other members may still use it.
A member whose process exits right after it closes (robotd) joins with a context of its own,
``BusClient(url, context=own())``, and calls :func:`end` after ``close()``: that waits until
each socket has sent what it queued, or its linger ran out.
"""

from __future__ import annotations

import logging
import threading
from typing import Final

import zmq

log = logging.getLogger("robotlab.bus")

CLOSE_LINGER_MS: Final = 2000
"""How long a closed socket of an own context may still send while the context ends (a loaded
machine's broker reading a reply of megabytes). With no connection nothing is queued
(``ZMQ_IMMEDIATE``), so it costs no wait."""
END_SECONDS: Final = 5.0
"""At most this long for an own context to end (a socket not closed yet: its thread is stuck)."""


def own(linger_ms: int = CLOSE_LINGER_MS) -> zmq.Context:
    """A context for one member: its link's socket lingers ``linger_ms`` at close (the shared
    context's default is 100 ms, which counts for nothing since that context never ends)."""
    context = zmq.Context()
    context.setsockopt(zmq.LINGER, linger_ms)
    return context


def end(context: zmq.Context, name: str, timeout: float = END_SECONDS) -> bool:
    """End ``context`` (once every socket of it is closed) when its sockets have sent what they
    queued; False, logged, if that took longer than ``timeout`` s and was given up."""
    # On a thread: ZeroMQ's term waits, uninterruptibly, for every socket of the context to close.
    ending = threading.Thread(target=context.term, name="robotlab-bus-term", daemon=True)
    ending.start()
    ending.join(timeout)
    if ending.is_alive():
        log.warning("bus: %s closed; ZeroMQ had not sent everything after %gs, some frames may "
                    "be lost", name, timeout)
    return not ending.is_alive()
