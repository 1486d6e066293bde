"""How a broker process stops: what came in last is routed, and sent, before the process exits.

systemd stops a crew's robots before its broker (they are ordered after it), so the broker's
SIGTERM comes right after the last robot drained, whose last frames (its reply to a client
elsewhere, its BYE) may still be unread in the broker's socket. ``serve`` runs the broker on a
context of its own (:func:`own`, whose sockets linger); after the loop, :func:`last_turns`
keeps routing until the socket is quiet, and :func:`end` lets what was routed leave. An
embedded broker (the process's shared context, no linger) stops after its pass, as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import zmq

LINGER_MS = 1000
"""How long the closed socket may still send what the last turns routed (a peer not reading)."""
LAST_LOOK_MS = 100
"""The last turns end once the socket has been quiet this long..."""
LAST_TURNS_SECONDS = 1.0
"""...or after this long, however busy."""
END_SECONDS = 3.0
"""At most this long for the context to end."""


def own() -> zmq.Context:
    """The context of a broker process: its socket lingers at close, and :func:`end` ends it."""
    context = zmq.Context()
    context.setsockopt(zmq.LINGER, LINGER_MS)
    return context


def last_turns(context: zmq.Context, sock: zmq.Socket | None, drain: Callable[[], object],
               end_turn: Callable[[float], None]) -> None:
    """While input keeps coming in, ``drain`` the socket and ``end_turn`` (commit, then send);
    only on a context from :func:`own`, whose process exits next. ``sock.poll`` reads the
    socket's events itself: no edge of its fd is waited for."""
    if sock is None or not context.sockopts.get(zmq.LINGER):
        return  # an embedded broker: its process goes on, and so may its clients
    deadline = time.monotonic() + LAST_TURNS_SECONDS
    while time.monotonic() < deadline and sock.poll(LAST_LOOK_MS, zmq.POLLIN):
        drain()
        end_turn(time.monotonic())


def end(context: zmq.Context) -> None:
    """End the context once its socket has sent what it holds (up to its linger), on a thread:
    ZeroMQ's term waits, uninterruptibly, for every socket to close."""
    ending = threading.Thread(target=context.term, name="robotlab-broker-term", daemon=True)
    ending.start()
    ending.join(END_SECONDS)
