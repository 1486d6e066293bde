"""The connection behind a BusClient: one DEALER socket, a lock around it, and an I/O thread.

ZeroMQ sockets are not thread-safe, but they may be used from several threads one at a time
(the lock is the memory barrier ZeroMQ asks for). Any thread sends directly under the lock:
no hand-off, no wake-up, which measured here was most of a round trip's cost. The I/O thread
never calls into ZeroMQ while it waits: it waits on the socket's notification fd (and a wake
pipe) with plain ``select.poll``, then takes the lock to read. Because that fd is edge
triggered and any socket operation may consume the edge, a sender that sees input pending
after its send reads it itself, as a seated caller would (at most ``DRAIN_BUDGET`` frames,
then it wakes the I/O thread for the rest).

A caller waiting for its own reply or receipt reads the socket itself (:meth:`Link.wait_reading`)
while the I/O thread steps aside: the reply then wakes one thread, not the I/O thread and then
the caller (a second wake-up and a hand-over of the GIL, measured in docs/benchmarks.md).

The I/O thread also keeps the connection alive: heartbeats when idle, and a fresh socket plus
HELLO (same instance id) with jittered exponential backoff when the broker goes silent. Every
unsettled message is sent again after each WELCOME; receivers dedupe by (sender, id). Replies,
acks and nacks are kept until the broker confirms them (:mod:`robotlab.bus.kept`), and resent.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import zmq

from robotlab.errors import ProtocolError

from . import protocol
from .dialer import Dialer
from .handshake import open_dealer
from .heartbeat_stats import StatsReport
from .keys import KeyConfig
from .protocol import Body, Command, Frame
from .seat import Seat
from .tracking import Latch

log = logging.getLogger("robotlab.bus")

DRAIN_BUDGET = 32
"""Most frames a sending thread reads after its send before it leaves the rest to the I/O thread."""


class Link(Dialer):
    """Owns the socket and the I/O thread; calls ``on_frame`` for inbound frames. The welcome
    state machine (HELLO, backoff, refusals) is its :class:`~robotlab.bus.dialer.Dialer` part."""

    def __init__(
        self,
        context: zmq.Context,
        url: str,
        hello: dict[str, Any],
        on_frame: Callable[[Frame], None],
        on_welcome: Callable[[dict[str, Any]], None],
        keys: KeyConfig | None = None,
    ) -> None:
        super().__init__(url, hello, keys)
        self.context = context
        self.dropped: Counter[str] = Counter()
        """Inbound frames dropped, by reason (an ErrorCode, or ``handler_error``)."""
        self.on_frame = on_frame
        self.on_welcome = on_welcome
        self._later: list[tuple[float, int, list[Body]]] = []
        self._later_seq = itertools.count()
        self._acks: list[int] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._running = True
        self.holding: Callable[[], list[int]] = list
        """Deliveries this member holds unacked (queued or running); touched while held."""
        self.claims: Callable[[], Body] = bytes
        """The HELLO's body: the messages this member had (its dispatcher's ``claims``)."""
        self.ack_timeout = 30.0
        self._last_touch = 0.0
        self._socket: zmq.Socket | None = None
        self._fd = -1  # read once a socket (a getsockopt)
        self.seat = Seat()
        self.stats = StatsReport()
        self._quiet = False  # the last call into the socket was a ZMQ_EVENTS read that found nothing
        self._last_recv = self._last_sent = 0.0
        self._io_thread = threading.Thread(target=self._loop, name=f"robotlab-bus-{hello['name']}", daemon=True)
        self._io_ident = 0  # the I/O thread's ident (set by _loop), read on every send: Thread.ident is a Python property

    # -- called from any thread ----------------------------------------------------------------

    def start(self) -> None:
        """Open the socket, say HELLO and start the I/O thread."""
        with self._lock:
            self._reconnect()
        self._io_thread.start()

    @property
    def alive(self) -> bool:
        """True while the I/O thread runs."""
        return self._io_thread.is_alive()

    def post(self, frames: list[Body]) -> bool:
        """Send frames now if the broker has welcomed us; False if they were not sent.

        Unsent SENDs are not lost: the client keeps them until settled and sends them again
        after the next WELCOME.
        """
        with self._lock:
            if self._socket is None or not (self.welcomed.is_set() or protocol.command_of(frames) == Command.BYE):
                return False
            sent = self._send(frames)
            self._wake_if_input()
            return sent

    def post_kept(self, frames: list[Body]) -> bool:
        """Send a reply or a nack now if welcomed, and keep it until the broker confirms it."""
        with self._lock:
            sent = self._socket is not None and self.welcomed.is_set() and self._send(frames)
            self.kept.keep(self._seq if sent else None, frames)
            if sent:
                self._wake_if_input()
            return sent

    def post_later(self, delay: float, frames: list[Body]) -> None:
        """Send frames after ``delay`` seconds (busy retries)."""
        with self._lock:
            heapq.heappush(self._later, (time.monotonic() + delay, next(self._later_seq), frames))
        self._wake()

    def ack(self, delivery: int) -> None:
        """Ack a delivery: batched when called while the I/O thread handles input, else sent now."""
        with self._lock:
            self._acks.append(delivery)
            if threading.get_ident() != self._io_ident:
                self._flush_acks()
                self._wake_if_input()

    def wait_reading(self, latch: Latch, timeout: float | None) -> bool:
        """Wait up to ``timeout`` s (None: no limit) for ``latch``, reading the socket meanwhile
        from the reader's seat (:mod:`robotlab.bus.seat`) when it is free: the frame that sets
        the latch is then read and handled on this thread, and any other frame as the I/O thread
        would have."""
        with self._lock:
            seated = not latch.is_set() and self._socket is not None and self.seat.claim(self._io_ident)
            # Quiet: nothing waited at the last ZMQ_EVENTS read (most often the one after the
            # caller's own send) and nobody called into the socket since, so its fd will show
            # whatever comes: the seat polls it first instead of reading ZMQ_EVENTS once more.
            quiet_fd = self._fd if seated and self._quiet else None
        if not seated:
            return latch.wait(timeout)
        return self.seat.read_until(latch, timeout, self._read_seated, self._leave_seat, quiet_fd)

    def _read_seated(self, latch: Latch) -> int | None:
        with self._lock:
            if self._socket is None or not self._running:
                return None
            while True:
                self._drain_socket(latch)
                sent = self._seq
                self._flush_acks()
                if not self._input_after_send(sent):
                    return self._fd

    def _leave_seat(self) -> None:
        self.seat.leave()  # no wake-up: the I/O thread takes the socket back within LOOK_MS if nobody sat down

    @property
    def in_drain(self) -> bool:
        """True on a thread that is handling inbound frames (the I/O thread, or a seated caller)."""
        return threading.get_ident() in (self._io_ident, self.seat.draining)

    def close(self, bye: bool = True, timeout: float = 2.0) -> None:
        """Say BYE (unless told not to), stop the thread and close the socket."""
        if bye:
            self.post(protocol.encode(Command.BYE))
        self._running = False
        self._wake()
        if self._io_thread.is_alive() and threading.current_thread() is not self._io_thread:
            self._io_thread.join(timeout)

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
        me = threading.get_ident()
        if self._socket is None or me in (self._io_ident, self.seat.holder, self.seat.draining) or not self._readable():
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

    # -- the I/O thread ------------------------------------------------------------------------

    def _loop(self) -> None:
        self._io_ident = threading.get_ident()  # before start() returns to its caller: this thread's own checks
        try:
            while self._running:
                try:
                    with self._lock:
                        if self.seat.holder is None:
                            self._drain_socket()
                        sent = self._seq  # a drain ends on a ZMQ_EVENTS read: only later sends can take an edge
                        if self.seat.holder is None:
                            self._flush_acks()
                        self._timers()
                        fd = self._fd if self.seat.holder is None else -1  # -1: stepped aside (Seat.io_wait)
                        timeout = self._poll_ms()
                        if self._input_after_send(sent):
                            timeout = self._missed_edge(fd, timeout)
                except zmq.ContextTerminated:
                    return
                except Exception as exc:  # nothing may stop this thread: start over on a fresh socket
                    self._recover(exc)
                    continue
                self._wait(fd, timeout)
            with self._lock:
                self._flush_acks()
        finally:
            with self._lock:
                self._sock.close(linger=self.context.sockopts.get(zmq.LINGER, 100))  # robotlab.bus.context
                self._socket = None
                self._close_monitor()
            os.close(self._wake_r)
            os.close(self._wake_w)
            self.seat.close()

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

    def _recover(self, exc: Exception) -> None:
        self._note("io_error", f"bus: the I/O loop of {self.hello['name']} failed ({exc!r}); reconnecting")
        self._wait(self._wake_r, 100)  # no busy loop if the fresh socket fails the same way
        with self._lock:
            self.welcomed.clear()
            self._reconnect()

    def _note(self, reason: str, text: str) -> None:
        """Count a dropped frame or a failure; log the first of each reason as a warning."""
        self.dropped[reason] += 1
        log.log(logging.WARNING if self.dropped[reason] == 1 else logging.DEBUG, "%s", text)

    def _wait(self, fd: int, timeout_ms: int) -> None:
        for ready, _ in self.seat.io_wait(fd, self._wake_r, timeout_ms):
            if ready == self._wake_r:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_r, 4096)

    def _poll_ms(self) -> int:
        if not self.welcomed.is_set():
            return 10 if time.monotonic() - self._attempt_at < 1 else 100
        wait = min(self.heartbeat / 2, self.ack_timeout / 3)
        if self._later:
            wait = min(wait, self._later[0][0] - time.monotonic())
        return max(int(wait * 1000), 1)

    def _flush_acks(self) -> None:
        if self._acks and self.welcomed.is_set():
            frames = protocol.encode(Command.ACK, {"deliveries": self._acks})
            if self._send(frames):
                self.kept.keep(self._seq, frames)
                self._acks = []

    def _drain_socket(self, until: Latch | None = None, budget: int = -1) -> bool:
        """Read and handle what waits (at most ``budget`` frames, -1: no limit); True if it
        stopped at its budget with input left."""
        self.seat.draining = threading.get_ident()
        try:
            return self._drain_frames(until, budget)
        finally:
            self.seat.draining = None

    def _drain_frames(self, until: Latch | None, budget: int) -> bool:
        while self._readable():
            if budget == 0:
                return True
            budget -= 1
            try:
                frames = protocol.recv(self._sock)
            except zmq.Again:
                return False
            self._last_recv = time.monotonic()
            try:
                frame = protocol.decode(frames)
            except ProtocolError as exc:  # a broken broker (or a forged frame) must not kill the client
                self._note(exc.code, f"bus: dropped a frame from the broker ({exc.code}): {exc}")
                continue
            try:
                self._handle(frame)
            except Exception as exc:  # one bad frame costs that frame, never the connection
                self._note("handler_error", f"bus: dropped a {frame.command.name} that failed: {exc!r}")
                if frame.command == Command.DELIVER and frame.header["delivery"]:
                    reason = f"the receiver could not take it: {exc!r}"[: protocol.TEXT_MAX]
                    self._send(protocol.encode(Command.NACK, {"delivery": frame.header["delivery"], "reason": reason}))
            if until is not None and until.is_set() and self.seat.watched:
                # The seated caller's own frame: it leaves without reading ZMQ_EVENTS once more.
                # _quiet stays False, so whoever reads next reads it first, and the leave timer
                # wakes the I/O thread (it waits on it, reading or not) to drain within LOOK_MS.
                return False
        return False

    def _on_welcome(self, header: dict[str, Any]) -> None:
        self.ack_timeout = float(header.get("ack_timeout", self.ack_timeout))
        self._welcomed_by(header)
        self.on_welcome(header)
        for frames in self.kept.take():
            self.kept.keep(self._seq if self._send(frames) else None, frames)

    def _timers(self) -> None:
        now = time.monotonic()
        while self._later and self._later[0][0] <= now and self.welcomed.is_set():
            self._send(heapq.heappop(self._later)[2])
        if self.refused is not None:
            return  # retrying a HELLO the broker forbids would only be refused again
        if not self.welcomed.is_set():
            self._retry_hello(now)
        elif now - self._last_recv > self.heartbeat * self.liveness:
            log.warning("bus: broker %s went silent; reconnecting", self.url)
            self.welcomed.clear()
            self._reconnect()
        elif now - self._last_sent >= self.heartbeat or (self.stats.source is not None and self.stats.changed(now)):
            self._send(protocol.encode(Command.HEARTBEAT, self.stats.header(now)))  # robotlab.bus.heartbeat_stats
        if self.welcomed.is_set() and now - self._last_touch >= self.ack_timeout / 3:
            self._touch(now)

    def _touch(self, now: float) -> None:
        held = self.holding()
        if held and self._send(protocol.encode(Command.TOUCH, {"deliveries": held})):
            self._last_touch = now
        elif not held:
            self._last_touch = now

    def _reconnect(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
        sock, self._monitor = open_dealer(self.context, self._next_url(), self.keys)
        self._socket, self._quiet = sock, False
        self._fd = sock.fileno()
        self._seq = 0  # a new connection's count: what was kept counts as unsent
        self.kept.unsend()
        self._hello_sent = self._send_hello()

    def _send_hello(self) -> bool:
        self._last_recv = time.monotonic()
        return self._send(protocol.encode(Command.HELLO, self.hello, self.claims()))

    def _send(self, frames: list[Body]) -> bool:
        self._quiet = False  # a send processes the socket's commands: it may take the fd's edge
        try:
            protocol.send(self._sock, frames)
        except zmq.Again:
            return False
        self._seq += 1
        self._last_sent = time.monotonic()
        return True

