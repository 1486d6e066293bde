"""The I/O thread behind a BusClient: the only code that touches its DEALER socket.

Application threads hand frames over through a deque and a wake-up pipe. The loop polls the
socket and the pipe, sends what is queued, handles what arrived, flushes batched acks, and
keeps the connection alive: heartbeats when idle, and a fresh socket plus HELLO (same instance
id) with jittered exponential backoff when the broker goes silent. Every unsettled message is
sent again after each WELCOME; receivers dedupe by (sender, id).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import zmq

from . import protocol
from .protocol import Command, ErrorCode, Frame

log = logging.getLogger("robotlab.bus")

BACKOFF_START = 1.0
BACKOFF_MAX = 30.0


class Link:
    """Owns the socket and the connection state machine; calls ``on_frame`` for inbound frames."""

    def __init__(
        self,
        context: zmq.Context,
        url: str,
        hello: dict[str, Any],
        on_frame: Callable[[Frame], None],
        on_welcome: Callable[[dict[str, Any]], None],
    ) -> None:
        self.context = context
        self.url = url
        self.hello = hello
        self.on_frame = on_frame
        self.on_welcome = on_welcome
        self.welcome: dict[str, Any] | None = None
        self.welcomed = threading.Event()
        self.heartbeat = 1.0
        self.liveness = 3
        self._queue: deque[list[bytes]] = deque()
        self._later: list[tuple[float, int, list[bytes]]] = []
        self._later_seq = itertools.count()
        self._acks: list[int] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._signaled = False
        self._running = True
        self._socket: zmq.Socket | None = None
        self._poller = zmq.Poller()
        self._last_recv = self._last_sent = self._attempt_at = 0.0
        self._hello_sent = False
        self._backoff = BACKOFF_START
        self._retry_in = BACKOFF_START
        self._thread = threading.Thread(target=self._loop, name=f"robotlab-bus-{hello['name']}", daemon=True)

    # -- called from any thread ----------------------------------------------------------------

    def start(self) -> None:
        """Start the I/O thread."""
        self._thread.start()

    def post(self, frames: list[bytes]) -> None:
        """Queue frames for sending (thread-safe)."""
        self._queue.append(frames)
        self._wake()

    def post_later(self, delay: float, frames: list[bytes]) -> None:
        """Queue frames to be sent after ``delay`` seconds (called from the I/O thread only)."""
        heapq.heappush(self._later, (time.monotonic() + delay, next(self._later_seq), frames))

    def ack(self, delivery: int) -> None:
        """Queue an ack; acks are batched into one ACK frame per loop pass."""
        self._queue.append([b"ack", delivery.to_bytes(8, "big")])
        self._wake()

    def close(self, bye: bool = True, timeout: float = 2.0) -> None:
        """Say BYE (unless told not to), stop the thread and close the socket."""
        if bye:
            self.post(protocol.encode(Command.BYE))
        self._running = False
        self._wake()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _wake(self) -> None:
        if not self._signaled:
            self._signaled = True
            try:
                os.write(self._wake_w, b"x")
            except BlockingIOError:
                pass

    # -- the I/O thread ------------------------------------------------------------------------

    def _loop(self) -> None:
        self._poller.register(self._wake_r, zmq.POLLIN)
        self._reconnect()
        try:
            while self._running:
                events = dict(self._poller.poll(self._poll_ms()))
                if self._wake_r in events:
                    self._drain_wake()
                self._flush_queue()
                if self._socket in events:
                    self._drain_socket()
                self._flush_acks()
                self._timers()
            self._flush_queue()
            self._flush_acks()
        finally:
            self._socket.close(linger=100)
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _poll_ms(self) -> int:
        if not self.welcomed.is_set():
            return 100
        wait = self.heartbeat / 2
        if self._later:
            wait = min(wait, self._later[0][0] - time.monotonic())
        return max(int(wait * 1000), 1)

    def _drain_wake(self) -> None:
        try:
            os.read(self._wake_r, 4096)
        except BlockingIOError:
            pass
        self._signaled = False

    def _flush_queue(self) -> None:
        while self._queue:
            frames = self._queue.popleft()
            if frames[0] == b"ack":
                self._acks.append(int.from_bytes(frames[1], "big"))
            elif self.welcomed.is_set() or frames[1][0] == Command.BYE:
                self._send(frames)
            # else: not connected; the owner resends unsettled SENDs after WELCOME

    def _flush_acks(self) -> None:
        if self._acks and self.welcomed.is_set():
            if self._send(protocol.encode(Command.ACK, {"deliveries": self._acks})):
                self._acks = []

    def _drain_socket(self) -> None:
        while True:
            try:
                frames = protocol.recv(self._socket)
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
        elif frame.command != Command.HEARTBEAT:
            self.on_frame(frame)

    def _on_welcome(self, header: dict[str, Any]) -> None:
        self.welcome = header
        self.heartbeat = float(header["heartbeat"])
        self.liveness = int(header["liveness"])
        self._backoff = self._retry_in = BACKOFF_START
        self.welcomed.set()
        self.on_welcome(header)

    def _timers(self) -> None:
        now = time.monotonic()
        while self._later and self._later[0][0] <= now:
            self._queue.append(heapq.heappop(self._later)[2])
        self._flush_queue()
        if not self.welcomed.is_set():
            if now - self._attempt_at >= self._retry_in:
                self._backoff = min(self._backoff * 2, BACKOFF_MAX)
                self._retry_in = self._backoff * random.uniform(0.75, 1.25)
                self._reconnect()
            elif not self._hello_sent:
                self._hello_sent = self._send_hello()  # the connection was not up yet
            return
        if now - self._last_recv > self.heartbeat * self.liveness:
            log.warning("bus: broker %s went silent; reconnecting", self.url)
            self.welcomed.clear()
            self._reconnect()
        elif now - self._last_sent >= self.heartbeat:
            self._send(protocol.encode(Command.HEARTBEAT))

    def _reconnect(self) -> None:
        if self._socket is not None:
            self._poller.unregister(self._socket)
            self._socket.close(linger=0)
        sock = self.context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)  # never queue on a dead connection; we resend ourselves
        sock.setsockopt(zmq.SNDHWM, 100_000)
        sock.setsockopt(zmq.RCVHWM, 100_000)
        sock.connect(self.url)
        self._socket = sock
        self._poller.register(sock, zmq.POLLIN)
        self._attempt_at = time.monotonic()
        self._hello_sent = self._send_hello()

    def _send_hello(self) -> bool:
        self._last_recv = time.monotonic()
        return self._send(protocol.encode(Command.HELLO, self.hello))

    def _send(self, frames: list[bytes]) -> bool:
        try:
            protocol.send(self._socket, frames)
        except zmq.Again:
            return False
        self._last_sent = time.monotonic()
        return True
