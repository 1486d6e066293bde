"""The connection behind a BusClient: one DEALER socket, a lock around it, and an I/O thread.

Who sends and who reads the socket, under that lock, is the
:class:`~robotlab.bus.member.socket_pump.Pump` part of a Link; finding a broker and keeping its
welcome is its :class:`~robotlab.bus.member.dialer.Dialer` part. This module holds the I/O thread
and what it does on its own, besides reading: it keeps the connection alive. It sends heartbeats
when idle, TOUCHes for the deliveries this member holds, and busy retries when they are due; it
opens a fresh socket and says HELLO again (same instance id) with jittered exponential backoff
when the broker goes silent. Every unsettled message is sent again after each WELCOME; receivers
dedupe by (sender, id). Replies, acks and nacks are kept until the broker confirms them
(:mod:`robotlab.bus.member.unconfirmed_replies`), and resent.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from collections.abc import Callable
from heapq import heappop, heappush
from time import monotonic
from typing import Any

import zmq

from ..keys import KeyConfig
from ..wire import protocol
from ..wire.protocol import Body, Command
from .handshake import open_dealer
from .heartbeat_stats import StatsReport
from .socket_pump import Pump

log = logging.getLogger("robotlab.bus")


class Link(Pump):
    """Owns the socket and the I/O thread; calls ``on_frame`` (its client sets it) for inbound
    frames. The welcome state machine (HELLO, backoff, refusals) is its
    :class:`~robotlab.bus.member.dialer.Dialer` part, the reading and sending under the lock its
    :class:`~robotlab.bus.member.socket_pump.Pump` part."""

    def __init__(
        self,
        context: zmq.Context,
        url: str,
        hello: dict[str, Any],
        on_welcome: Callable[[dict[str, Any]], None],
        keys: KeyConfig | None = None,
    ) -> None:
        super().__init__(context, url, hello, keys)
        self.on_welcome = on_welcome
        self._later: list[tuple[float, int, list[Body]]] = []
        self._later_seq = itertools.count()
        self.holding: Callable[[], list[int]] = list
        """Deliveries this member holds unacked (queued or running); touched while held."""
        self.claims: Callable[[], Body] = bytes
        """The HELLO's body: the messages this member had (its dispatcher's ``claims``)."""
        self.ack_timeout = 30.0
        self._last_touch = 0.0
        self.stats = StatsReport()
        self._io_thread = threading.Thread(target=self._loop, name=f"robotlab-bus-{hello['name']}",
                                           daemon=True)

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
            if self._socket is None or not (self.welcomed.is_set()
                                            or protocol.command_of(frames) == Command.BYE):
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
            heappush(self._later, (monotonic() + delay, next(self._later_seq), frames))
        self._wake()

    def close(self, bye: bool = True, timeout: float = 2.0) -> None:
        """Say BYE (unless told not to), stop the thread and close the socket."""
        if bye:
            self.post(protocol.encode(Command.BYE))
        self._running = False
        self._wake()
        if self._io_thread.is_alive() and threading.current_thread() is not self._io_thread:
            self._io_thread.join(timeout)

    # -- the I/O thread ------------------------------------------------------------------------

    def _loop(self) -> None:
        # Before start() returns to its caller: this thread's own checks read it.
        self._io_ident = threading.get_ident()
        try:
            fired = False
            while self._running:
                try:
                    with self._lock:
                        if self.seat.holder is None:
                            self._drain_socket(fired=fired)
                        # A drain ends on a ZMQ_EVENTS read: only later sends can take an edge.
                        sent = self._seq
                        if self.seat.holder is None:
                            self._flush_acks()
                        self._timers()
                        # -1: stepped aside for a seated caller (Seat.io_wait)
                        fd = self._fd if self.seat.holder is None else -1
                        timeout = self._poll_ms()
                        if self._input_after_send(sent):
                            timeout = self._missed_edge(fd, timeout)
                except zmq.ContextTerminated:
                    return
                except Exception as exc:
                    # nothing may stop this thread: start over on a fresh socket
                    self._recover(exc)
                    continue
                fired = self._wait(fd, timeout)
            with self._lock:
                self._flush_acks()
        finally:
            self._close_socket()

    def _close_socket(self) -> None:
        """The I/O thread's last act: close the socket, its monitor and the wake pipes."""
        with self._lock:
            # the context's linger: robotlab.bus.member.zmq_context
            self._sock.close(linger=self.context.sockopts.get(zmq.LINGER, 100))
            self._socket = None
            self._close_monitor()
        os.close(self._wake_r)
        os.close(self._wake_w)
        self.seat.close()

    def _recover(self, exc: Exception) -> None:
        self._note("io_error",
                   f"bus: the I/O loop of {self.hello['name']} failed ({exc!r}); reconnecting")
        self._wait(self._wake_r, 100)  # no busy loop if the fresh socket fails the same way
        with self._lock:
            self.welcomed.clear()
            self._reconnect()

    def _wait(self, fd: int, timeout_ms: int) -> bool:
        """Wait for input, a wake-up or a timer; True when the socket's ``fd`` fired."""
        fired = False
        for ready, _ in self.seat.io_wait(fd, self._wake_r, timeout_ms):
            if ready == self._wake_r:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_r, 4096)
            elif ready == fd:
                fired = True
        return fired

    def _poll_ms(self) -> int:
        if not self.welcomed.is_set():
            return 10 if monotonic() - self._attempt_at < 1 else 100
        wait = min(self.heartbeat / 2, self.ack_timeout / 3)
        if self._later:
            wait = min(wait, self._later[0][0] - monotonic())
        return max(int(wait * 1000), 1)

    def _on_welcome(self, header: dict[str, Any]) -> None:
        self.ack_timeout = float(header.get("ack_timeout", self.ack_timeout))
        self._welcomed_by(header)
        self.on_welcome(header)
        for frames in self.kept.take():
            self.kept.keep(self._seq if self._send(frames) else None, frames)

    def _timers(self) -> None:
        now = monotonic()
        while self._later and self._later[0][0] <= now and self.welcomed.is_set():
            self._send(heappop(self._later)[2])
        if self.refused is not None:
            return  # retrying a HELLO the broker forbids would only be refused again
        if not self.welcomed.is_set():
            self._retry_hello(now)
        elif now - self._last_recv > self.heartbeat * self.liveness:
            log.warning("bus: broker %s went silent; reconnecting", self.url)
            self.welcomed.clear()
            self._reconnect()
        elif now - self._last_sent >= self.heartbeat or self._stats_changed(now):
            # the member's own figures ride on it: robotlab.bus.member.heartbeat_stats
            self._send(protocol.encode(Command.HEARTBEAT, self.stats.header(now)))
        if self.welcomed.is_set() and now - self._last_touch >= self.ack_timeout / 3:
            self._touch(now)

    def _stats_changed(self, now: float) -> bool:
        return self.stats.source is not None and self.stats.changed(now)

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
        self._last_recv = monotonic()
        return self._send(protocol.encode(Command.HELLO, self.hello, self.claims()))
