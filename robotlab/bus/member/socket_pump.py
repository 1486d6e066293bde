"""The socket pump of a Link: who sends and who reads its one DEALER socket, and when.

ZeroMQ sockets are not thread-safe, but they may be used from several threads one at a time
(the lock is the memory barrier ZeroMQ asks for). Any thread sends directly under the lock:
no hand-off, no wake-up, which measured here was most of a round trip's cost. The I/O thread
never calls into ZeroMQ while it waits: it waits on the socket's notification fd (and a wake
pipe) with plain ``select.poll``, then takes the lock to read. Because that fd is edge
triggered and any socket operation may consume the edge, a sender that sees input pending
after its send reads it itself, as a seated caller would (at most ``DRAIN_BUDGET`` frames,
then it wakes the I/O thread for the rest).

A caller waiting for its own reply or receipt reads the socket itself (:meth:`Pump.wait_reading`)
while the I/O thread steps aside: the reply then wakes one thread, not the I/O thread and then
the caller (a second wake-up and a hand-over of the GIL, measured in docs/benchmarks.md).

The I/O thread itself, its timers and its reconnects are :mod:`robotlab.bus.member.link`'s.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import Counter
from threading import get_ident
from time import monotonic
from typing import Any

import zmq

from robotlab.errors import ProtocolError

from ..keys import KeyConfig
from ..wire import protocol
from ..wire.protocol import Body, Command
from .dialer import Dialer
from .reader_seat import Seat
from .tracking import Latch

log = logging.getLogger("robotlab.bus")

DRAIN_BUDGET = 32
"""Most frames a sending thread reads after its send before it leaves the rest to the I/O
thread."""


class Pump(Dialer):
    """Sends and reads the socket under the lock; hands each inbound frame to the
    :class:`~robotlab.bus.member.dialer.Dialer` part, which acts on those about the connection and
    passes the others on. The :class:`~robotlab.bus.member.link.Link` opens the socket and runs the
    I/O thread."""

    def __init__(self, context: zmq.Context, url: str, hello: dict[str, Any],
                 keys: KeyConfig | None) -> None:
        super().__init__(url, hello, keys)
        self.context = context
        self.dropped: Counter[str] = Counter()
        """Inbound frames dropped, by reason (an ErrorCode, or ``handler_error``)."""
        self._acks: list[int] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._running = True
        self._socket: zmq.Socket | None = None
        self._fd = -1  # read once a socket (a getsockopt)
        self.seat = Seat()
        # True when the last call into the socket was a ZMQ_EVENTS read that found nothing
        self._quiet = False
        self._last_recv = self._last_sent = 0.0
        # The I/O thread's ident (set by Link._loop), read on every send: Thread.ident is a
        # Python property.
        self._io_ident = 0

    @property
    def closed(self) -> bool:
        """True once :meth:`~robotlab.bus.member.link.Link.close` was called."""
        return not self._running

    def ack(self, delivery: int) -> None:
        """Ack a delivery: batched when called while the I/O thread handles input, else sent
        now."""
        with self._lock:
            self._acks.append(delivery)
            if get_ident() != self._io_ident:
                self._flush_acks()
                self._wake_if_input()

    def wait_reading(self, latch: Latch, timeout: float | None) -> bool:
        """Wait up to ``timeout`` s (None: no limit) for ``latch``, reading the socket meanwhile
        from the reader's seat (:mod:`robotlab.bus.member.reader_seat`) when it is free: the frame
        that sets the latch is then read and handled on this thread, and any other frame as the
        I/O thread would have."""
        with self._lock:
            seated = (not latch.is_set() and self._socket is not None
                      and self.seat.claim(self._io_ident))
            # Quiet: nothing waited at the last ZMQ_EVENTS read (most often the one after the
            # caller's own send) and nobody called into the socket since, so its fd will show
            # whatever comes: the seat polls it first instead of reading ZMQ_EVENTS once more.
            quiet_fd = self._fd if seated and self._quiet else None
        if not seated:
            return latch.wait(timeout)
        return self.seat.read_until(latch, timeout, self._read_seated, self._leave_seat, quiet_fd)

    def _read_seated(self, latch: Latch, fired: bool) -> int | None:
        with self._lock:
            if self._socket is None or not self._running:
                return None
            while True:
                self._drain_socket(latch, fired=fired)
                fired = False
                sent = self._seq
                self._flush_acks()
                if not self._input_after_send(sent):
                    return self._fd

    def _leave_seat(self) -> None:
        # no wake-up: the I/O thread takes the socket back within LOOK_MS if nobody sat down
        self.seat.leave()

    @property
    def in_drain(self) -> bool:
        """True on a thread that is handling inbound frames (the I/O thread, or a seated
        caller)."""
        me = get_ident()
        return me == self._io_ident or me == self.seat.draining

    @property
    def _sock(self) -> zmq.Socket:
        """The current socket: the I/O thread holds one from connect until it exits."""
        assert self._socket is not None, "the link is not connected"
        return self._socket

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):  # already signalled, or closing
            os.write(self._wake_w, b"x")

    def _wake_if_input(self) -> None:
        # A send may have consumed the edge of the socket's fd: whoever reads must look again. The
        # I/O thread, a seated caller and a thread in a drain read ZMQ_EVENTS themselves after
        # their own sends (a drain reads it before each frame).
        me = get_ident()
        if (self._socket is None or me in (self._io_ident, self.seat.holder, self.seat.draining)
                or not self._readable()):
            return
        if self.seat.holder is None:
            # Nobody reads but the I/O thread: this thread reads what came itself, as a seated
            # caller would, instead of waking it (a pipe write, a wake-up, the GIL handed over).
            sent = self._seq
            left = self._drain_socket(budget=DRAIN_BUDGET)
            self._flush_acks()
            if not left and not self._input_after_send(sent):
                return  # else the I/O thread reads the rest: a sender is not the bus's reader
        (self._wake if self.seat.holder is None else self.seat.wake)()

    def _input_after_send(self, seq: int) -> bool:
        """True when this thread sent since ``seq`` and input waits: that send may have taken the
        edge of the socket's fd for a frame that came after the drain (call under the lock)."""
        return self._seq != seq and self._socket is not None and self._readable()

    def _readable(self) -> bool:
        """ZMQ_EVENTS has POLLIN (call under the lock); remembers a quiet answer for the seat."""
        readable = protocol.readable(self._sock)
        self._quiet = not readable
        return readable

    def _missed_edge(self, fd: int, timeout: int) -> int:
        """A send of this turn (an ACK, a heartbeat) may have taken the edge of a frame that came
        after the drain: its reader must not wait on the fd for it. Returns the poll timeout."""
        if fd == -1:
            self.seat.wake()
            return timeout
        return 0

    def _note(self, reason: str, text: str) -> None:
        """Count a dropped frame or a failure; log the first of each reason as a warning."""
        self.dropped[reason] += 1
        log.log(logging.WARNING if self.dropped[reason] == 1 else logging.DEBUG, "%s", text)

    def _flush_acks(self) -> None:
        if self._acks and self.welcomed.is_set():
            frames = protocol.encode(Command.ACK, {"deliveries": self._acks})
            if self._send(frames):
                self.kept.keep(self._seq, frames)
                self._acks = []

    def _drain_socket(self, until: Latch | None = None, budget: int = -1,
                      fired: bool = False) -> bool:
        """Read and handle what waits (at most ``budget`` frames, -1: no limit); True if it
        stopped at its budget with input left. ``fired``: a poll just found the socket's fd
        readable, so a frame almost surely waits: the first receive goes ahead without a
        ZMQ_EVENTS read (it processes the socket's commands itself, as that read would)."""
        self.seat.draining = get_ident()
        try:
            return self._drain_frames(until, budget, fired)
        finally:
            self.seat.draining = None

    def _drain_frames(self, until: Latch | None, budget: int, fired: bool) -> bool:
        while fired or self._readable():
            fired = False
            if budget == 0:
                return True
            budget -= 1
            try:
                frames = protocol.recv(self._sock)
            except zmq.Again:
                return False
            self._last_recv = monotonic()
            try:
                frame = protocol.decode(frames)
            except ProtocolError as exc:
                # a broken broker (or a forged frame) must not kill the client
                self._note(exc.code, f"bus: dropped a frame from the broker ({exc.code}): {exc}")
                continue
            try:
                self._handle(frame)
            except Exception as exc:  # one bad frame costs that frame, never the connection
                self._note("handler_error",
                           f"bus: dropped a {frame.command.name} that failed: {exc!r}")
                if frame.command == Command.DELIVER and frame.header["delivery"]:
                    self._refuse(frame.header["delivery"], exc)
            if until is not None and until.is_set() and self.seat.watched:
                # The seated caller's own frame: it leaves without reading ZMQ_EVENTS once more.
                # _quiet stays False, so whoever reads next reads it first, and the leave timer
                # wakes the I/O thread (it waits on it, reading or not) to drain within LOOK_MS.
                return False
        return False

    def _refuse(self, delivery: int, exc: Exception) -> None:
        """NACK a delivery whose frame failed to be handled."""
        reason = f"the receiver could not take it: {exc!r}"[: protocol.TEXT_MAX]
        self._send(protocol.encode(Command.NACK, {"delivery": delivery, "reason": reason}))

    def _send(self, frames: list[Body]) -> bool:
        self._quiet = False  # a send processes the socket's commands: it may take the fd's edge
        try:
            protocol.send(self._sock, frames)
        except zmq.Again:
            return False
        self._seq += 1
        self._last_sent = monotonic()
        return True
