"""The broker's ROUTER socket: its options, and its reads and writes on the hot path.

Every message the broker routes passes through :func:`recv` and :func:`send` twice a round
trip, so they make the fewest Python calls that do the same as the general
:mod:`robotlab.bus.protocol` ones.
"""

from __future__ import annotations

from typing import Final

import zmq

from robotlab.bus import protocol
from robotlab.bus.config import BrokerConfig, is_ipv6
from robotlab.bus.protocol import Body

from .security import KeyGuard

_NOBLOCK: Final = int(zmq.NOBLOCK)
_MORE: Final = int(zmq.SNDMORE) | _NOBLOCK
_send: Final = protocol.compiled_send
_recv: Final = protocol.compiled_recv


def bind(config: BrokerConfig, context: zmq.Context, guard: KeyGuard | None) -> zmq.Socket:
    """A ROUTER socket with the broker's options, bound to ``config.bind``."""
    sock = context.socket(zmq.ROUTER)
    sock.setsockopt(zmq.ROUTER_MANDATORY, 1)  # unroutable sends raise instead of vanishing
    sock.setsockopt(zmq.MAXMSGSIZE, config.max_message_bytes)
    sock.setsockopt(zmq.SNDHWM, 100_000)
    sock.setsockopt(zmq.RCVHWM, 100_000)
    sock.setsockopt(zmq.LINGER, 0)
    if is_ipv6(config.bind):
        sock.setsockopt(zmq.IPV6, 1)  # without it ZeroMQ answers "No such device" for [::1]
    if guard is not None:
        guard.secure(sock)
    try:
        sock.bind(config.bind)
    except zmq.ZMQError:
        sock.close(linger=0)  # the caller may try again once the address exists
        raise
    return sock


def recv(router: zmq.Socket) -> list[Body]:
    """[identity, *frames] of one message, without blocking (raises ``zmq.Again``).

    A ROUTER's identity frame always has the message after it, so only the message's own
    frames need a RCVMORE read (see :func:`robotlab.bus.protocol.recv`).
    """
    return [_recv(router, _NOBLOCK), *protocol.recv(router)]


def send(router: zmq.Socket, identity: bytes, frames: list[Body]) -> None:
    """Send frames built by :func:`robotlab.bus.protocol.encode` to ``identity``, without blocking.

    Raises ``zmq.Again`` when the peer's queue is full and ``zmq.ZMQError`` when the identity
    is unroutable (ROUTER_MANDATORY), like :func:`robotlab.bus.protocol.send`.
    """
    _send(router, identity, _MORE)
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        flags = _MORE if i < last else _NOBLOCK
        if len(frame) < protocol.LARGE_BODY:
            _send(router, frame, flags)
        else:  # by reference: pyzmq copies every frame it is told to copy, whatever its size
            _send(router, frame, flags, False)
