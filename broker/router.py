"""The broker's ROUTER socket: its options, its reads and writes on the hot path, and when it must
be drained.

Every message the broker routes passes through :func:`recv` and :func:`send` twice a round
trip, so they make the fewest Python calls that do the same as the general
:mod:`robotlab.bus.wire.protocol` ones.
"""

from __future__ import annotations

import select
from typing import Final

import zmq

from robotlab.bus.config import BrokerConfig, is_ipv6
from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Body

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
    frames need a RCVMORE read (see :func:`robotlab.bus.wire.protocol.recv`).
    """
    return [_recv(router, _NOBLOCK), *protocol.recv(router)]


def send(router: zmq.Socket, identity: bytes, frames: list[Body]) -> None:
    """Send frames built by :func:`robotlab.bus.wire.protocol.encode` to ``identity``, without
    blocking.

    Raises ``zmq.Again`` when the peer's queue is full and ``zmq.ZMQError`` when the identity
    is unroutable (ROUTER_MANDATORY), like :func:`robotlab.bus.wire.protocol.send`.
    """
    _send(router, identity, _MORE)
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        flags = _MORE if i < last else _NOBLOCK
        if len(frame) < protocol.LARGE_BODY:
            _send(router, frame, flags)
        else:  # by reference: pyzmq copies every frame it is told to copy, whatever its size
            _send(router, frame, flags, False)


class Readiness:
    """When the ROUTER must be drained: its notification fd (ZMQ_FD) polled with a wake pipe.

    Not ``zmq_poll``: for a socket it reads ZMQ_EVENTS, polls with no timeout, reads ZMQ_EVENTS
    again and only then waits, and each ZMQ_EVENTS read makes libzmq process its command
    mailbox (a poll and a getpid system call). The fd announces input only once a ZMQ_EVENTS
    read (or a receive) has found none, and any later call into the socket, a send, may take
    that edge: the drain ends on such a read, and sends made after it are followed by
    :meth:`sent`. Until then, and after a drain cut short, ``pending`` says to drain at once.
    """

    __slots__ = ("socket", "fd", "pending", "_poller")

    def __init__(self, sock: zmq.Socket, wake_fd: int) -> None:
        self.socket = sock
        self.fd = int(sock.getsockopt(zmq.FD))  # an int option (the stubs say int or bytes)
        self.pending = True  # nothing read yet: the fd may hide what came before
        self._poller = select.poll()
        for fd in (self.fd, wake_fd):  # in this order: poll lists what is ready in it
            self._poller.register(fd, select.POLLIN)

    def watch(self, fd: int) -> None:
        """Wake the loop for ``fd`` too (a standby's peer socket), which the caller reads each
        turn."""
        self._poller.register(fd, select.POLLIN)

    def wait(self, timeout_ms: int) -> bool:
        """Wait up to ``timeout_ms`` for input or a wake-up (not at all while ``pending``);
        True when the socket must be drained."""
        ready = self._poller.poll(0 if self.pending else timeout_ms)
        return self.pending or (bool(ready) and ready[0][0] == self.fd)

    def sent(self) -> None:
        """Sends came after the drain's last ZMQ_EVENTS read: read it again, so that input whose
        edge a send took is drained next turn instead of waiting out the poll."""
        if not self.pending:
            self.pending = protocol.readable(self.socket)
