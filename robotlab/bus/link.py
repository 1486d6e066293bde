"""The connection behind a BusClient: one DEALER socket, a lock around it, and an I/O thread.

ZeroMQ sockets are not thread-safe, but they may be used from several threads one at a time
(the lock is the memory barrier ZeroMQ asks for). Any thread sends directly under the lock:
no hand-off, no wake-up, which measured here was most of a round trip's cost. The I/O thread
never calls into ZeroMQ while it waits: it waits on the socket's notification fd (and a wake
pipe) with plain ``select.poll``, then takes the lock to read. Because that fd is edge
triggered and any socket operation may consume the edge, a sender that sees input pending
after its send wakes the I/O thread.

The I/O thread also keeps the connection alive: heartbeats when idle, and a fresh socket plus
HELLO (same instance id) with jittered exponential backoff when the broker goes silent. Every
unsettled message is sent again after each WELCOME; receivers dedupe by (sender, id).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import random
import select
import threading
import time
from collections.abc import Callable
from typing import Any

import zmq

from . import protocol
from .keys import KeyConfig
from .protocol import Command, ErrorCode, Frame

log = logging.getLogger("robotlab.bus")

BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
_POLLIN = int(zmq.POLLIN)
_EVENTS = int(zmq.EVENTS)


def _readable(sock: zmq.Socket) -> bool:
    """Whether a message waits on ``sock`` (ZMQ_EVENTS, an int option, has POLLIN)."""
    events = sock.get(_EVENTS)
    return isinstance(events, int) and bool(events & _POLLIN)


class Link:
    """Owns the socket and the connection state machine; calls ``on_frame`` for inbound frames."""

    def __init__(
        self,
        context: zmq.Context,
        url: str,
        hello: dict[str, Any],
        on_frame: Callable[[Frame], None],
        on_welcome: Callable[[dict[str, Any]], None],
        keys: KeyConfig | None = None,
    ) -> None:
        self.context = context
        self.keys = keys
        self.refused: str | None = None
        """Why the broker refused our HELLO (ERROR forbidden); we stop trying once set."""
        self.answered = threading.Event()
        """Set by a WELCOME or a refusal: either way, waiting longer changes nothing."""
        self.url = url
        self.hello = hello
        self.on_frame = on_frame
        self.on_welcome = on_welcome
        self.welcome: dict[str, Any] | None = None
        self.welcomed = threading.Event()
        self.heartbeat = 1.0
        self.liveness = 3
        self._lock = threading.RLock()
        self._later: list[tuple[float, int, list[bytes]]] = []
        self._later_seq = itertools.count()
        self._acks: list[int] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._running = True
        self.holding: Callable[[], list[int]] = list
        """Deliveries this member holds unacked (queued or running); touched while held."""
        self.ack_timeout = 30.0
        self._last_touch = 0.0
        self._socket: zmq.Socket | None = None
        self._last_recv = self._last_sent = self._attempt_at = 0.0
        self._hello_sent = False
        self._backoff = BACKOFF_START
        self._retry_in = BACKOFF_START
        self._thread = threading.Thread(target=self._loop, name=f"robotlab-bus-{hello['name']}", daemon=True)

    # -- called from any thread ----------------------------------------------------------------

    def start(self) -> None:
        """Open the socket, say HELLO and start the I/O thread."""
        with self._lock:
            self._reconnect()
        self._thread.start()

    def post(self, frames: list[bytes]) -> bool:
        """Send frames now if the broker has welcomed us; False if they were not sent.

        Unsent SENDs are not lost: the client keeps them until settled and sends them again
        after the next WELCOME.
        """
        with self._lock:
            if self._socket is None or not (self.welcomed.is_set() or frames[1][0] == Command.BYE):
                return False
            sent = self._send(frames)
            self._wake_if_input()
            return sent

    def post_later(self, delay: float, frames: list[bytes]) -> None:
        """Send frames after ``delay`` seconds (busy retries)."""
        with self._lock:
            heapq.heappush(self._later, (time.monotonic() + delay, next(self._later_seq), frames))
        self._wake()

    def ack(self, delivery: int) -> None:
        """Ack a delivery: batched when called while the I/O thread handles input, else sent now."""
        with self._lock:
            self._acks.append(delivery)
            if threading.current_thread() is not self._thread:
                self._flush_acks()
                self._wake_if_input()

    def close(self, bye: bool = True, timeout: float = 2.0) -> None:
        """Say BYE (unless told not to), stop the thread and close the socket."""
        if bye:
            self.post(protocol.encode(Command.BYE))
        self._running = False
        self._wake()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def _sock(self) -> zmq.Socket:
        """The current socket: the I/O thread holds one from connect until it exits."""
        assert self._socket is not None, "the link is not connected"
        return self._socket

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass  # already signalled, or closing

    def _wake_if_input(self) -> None:
        # A send may have consumed the edge of the socket's fd; don't let input sit unseen.
        if self._socket is not None and _readable(self._socket):
            self._wake()

    # -- the I/O thread ------------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            while self._running:
                with self._lock:
                    self._drain_socket()
                    self._flush_acks()
                    self._timers()
                    fd = self._sock.fileno()
                    timeout = self._poll_ms()
                self._wait(fd, timeout)
            with self._lock:
                self._flush_acks()
        finally:
            with self._lock:
                self._sock.close(linger=100)
                self._socket = None
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _wait(self, fd: int, timeout_ms: int) -> None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        for ready, _ in poller.poll(timeout_ms):
            if ready == self._wake_r:
                try:
                    os.read(self._wake_r, 4096)
                except BlockingIOError:
                    pass

    def _poll_ms(self) -> int:
        if not self.welcomed.is_set():
            return 10 if time.monotonic() - self._attempt_at < 1 else 100
        wait = min(self.heartbeat / 2, self.ack_timeout / 3)
        if self._later:
            wait = min(wait, self._later[0][0] - time.monotonic())
        return max(int(wait * 1000), 1)

    def _flush_acks(self) -> None:
        if self._acks and self.welcomed.is_set():
            if self._send(protocol.encode(Command.ACK, {"deliveries": self._acks})):
                self._acks = []

    def _drain_socket(self) -> None:
        while _readable(self._sock):
            try:
                frames = protocol.recv(self._sock)
            except zmq.Again:
                return
            self._last_recv = time.monotonic()
            try:
                frame = protocol.decode(frames)
            except Exception as exc:  # a broken broker must not kill the client
                log.warning("bus: dropped an unparseable frame from the broker: %s", exc)
                continue
            self._handle(frame)

    def _handle(self, frame: Frame) -> None:
        if frame.command == Command.WELCOME:
            self._on_welcome(frame.header)
        elif frame.command == Command.ERROR and frame.header.get("code") == ErrorCode.NOT_READY:
            self.welcomed.clear()  # the broker restarted and forgot us: introduce ourselves again
            self._attempt_at = time.monotonic()
            self._hello_sent = self._send_hello()
        elif frame.command == Command.ERROR and frame.header.get("code") == ErrorCode.FORBIDDEN:
            self.refused = str(frame.header.get("detail", "forbidden"))
            self.welcomed.clear()
            self.answered.set()
            log.error("bus: the broker at %s refused us: %s", self.url, self.refused)
        elif frame.command != Command.HEARTBEAT:
            self.on_frame(frame)

    def _on_welcome(self, header: dict[str, Any]) -> None:
        self.welcome = header
        self.heartbeat = float(header["heartbeat"])
        self.liveness = int(header["liveness"])
        self.ack_timeout = float(header.get("ack_timeout", self.ack_timeout))
        self._backoff = self._retry_in = BACKOFF_START
        self.welcomed.set()
        self.answered.set()
        self.on_welcome(header)

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
        elif now - self._last_sent >= self.heartbeat:
            self._send(protocol.encode(Command.HEARTBEAT))
        if self.welcomed.is_set() and now - self._last_touch >= self.ack_timeout / 3:
            self._touch(now)

    def _touch(self, now: float) -> None:
        held = self.holding()
        if held and self._send(protocol.encode(Command.TOUCH, {"deliveries": held})):
            self._last_touch = now
        elif not held:
            self._last_touch = now

    def _retry_hello(self, now: float) -> None:
        if now - self._attempt_at >= self._retry_in:
            self._backoff = min(self._backoff * 2, BACKOFF_MAX)
            self._retry_in = self._backoff * random.uniform(0.75, 1.25)
            self._reconnect()
        elif not self._hello_sent:
            self._hello_sent = self._send_hello()  # the connection was not up yet

    def _reconnect(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
        sock = self.context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)  # never queue on a dead connection; we resend ourselves
        sock.setsockopt(zmq.SNDHWM, 100_000)
        sock.setsockopt(zmq.RCVHWM, 100_000)
        if self.keys is not None:
            self.keys.apply(sock)
        sock.connect(self.url)
        self._socket = sock
        self._attempt_at = time.monotonic()
        self._hello_sent = self._send_hello()

    def _send_hello(self) -> bool:
        self._last_recv = time.monotonic()
        return self._send(protocol.encode(Command.HELLO, self.hello))

    def _send(self, frames: list[bytes]) -> bool:
        try:
            protocol.send(self._sock, frames)
        except zmq.Again:
            return False
        self._last_sent = time.monotonic()
        return True
