"""The reader's seat of a connection: a caller waiting for its own reply reads the socket itself.

The I/O thread of a :class:`~robotlab.bus.member.link.Link` normally reads the socket and hands a
reply to the caller waiting for it: two threads woken per reply, and the GIL handed from one to
the other. While a caller holds the seat, the I/O thread steps aside (it keeps its timers), and
the caller polls the socket's fd and handles what it reads exactly as the I/O thread would.

A one-shot timer (:mod:`robotlab.bus.member.timerfd`) keeps the I/O thread's turn: waiting on
it, the I/O thread takes the socket back within ``LOOK_MS`` of the last leave unless a caller sat
down again. A caller re-arms it as it sits down, while its reply is still on the way, so that
leaving (on the reply's way back to its caller) seldom has to; only a long sit's leave arms it.
Callers that come and go faster than that (a request loop) never wake it: no futex, no GIL
hand-over on the reply path. Where there is no timerfd it looks every ``LOOK_MS`` instead.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Callable
from threading import get_ident
from time import monotonic
from typing import TYPE_CHECKING, Final

import zmq

from .tracking import Latch

if TYPE_CHECKING:
    from .timerfd import OneShot

SLICE: Final = 0.1
"""Longest a seated caller keeps the seat: then it waits on its latch like any other caller,
so a long wait does not keep the I/O thread looking every few milliseconds."""
LOOK_MS: Final = 2
"""How soon after a caller leaves the I/O thread takes the socket back (milliseconds): the
longest a frame no caller waits for can sit unread once a seated caller has left."""
ARM_AT_CLAIM: Final = 0.75 * LOOK_MS / 1000
"""A caller sitting down re-arms the leave timer when it would fire sooner than this (seconds):
then a caller that leaves within a quarter of ``LOOK_MS`` finds it armed far enough ahead, and
does not arm it on its way back to its own caller (an arm is a ctypes call, microseconds)."""
ARM_AT_LEAVE: Final = 0.5 * LOOK_MS / 1000
"""A leaving caller re-arms the timer when it would fire sooner than this (seconds): after a
long sit. So it fires between half of ``LOOK_MS`` and ``LOOK_MS`` after the last leave."""


class Seat:
    """Who reads the socket besides the I/O thread: at most one caller at a time."""

    __slots__ = ("holder", "draining", "timer", "_fires", "_poller", "_fd", "_wake_r", "_wake_w",
                 "_io", "_io_fds")

    def __init__(self) -> None:
        self.holder: int | None = None
        """The thread ident of the seated caller, if any."""
        self.draining: int | None = None
        """The thread handling inbound frames right now: what it runs must not wait on the bus."""
        self._poller, self._fd = select.poll(), -1
        # made by the first claim: a member that never waits keeps its fds
        self._wake_r = self._wake_w = -1
        self.timer: OneShot | None = None
        """Armed by each leave (made with the wake pipe; None where timerfd is not available)."""
        self._fires = 0.0  # when the timer fires as last armed (monotonic seconds)
        self._io, self._io_fds = select.poll(), (-1, -1, -1)  # the I/O thread's wait, and on what

    def wake(self) -> None:
        """Make the seated caller look at the socket again: another thread's send may have taken
        the edge of its fd (the I/O thread's timers, a handler thread's reply)."""
        if self._wake_w != -1:  # -1: nobody ever sat, so nobody waits for it
            with contextlib.suppress(BlockingIOError, OSError):  # already signalled, or closed
                os.write(self._wake_w, b"x")

    def close(self) -> None:
        """Close the wake pipe and the timer (the link is closing)."""
        for fd in (self._wake_r, self._wake_w):
            if fd != -1:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._wake_r = self._wake_w = -1
        if self.timer is not None:
            self.timer.close()
            self.timer = None

    def claim(self, io_thread: int | None) -> bool:
        """Seat the calling thread (call under the link's lock); False if taken, or if it is the
        I/O thread or a thread inside a drain (a handler that would wait on what it reads)."""
        me = get_ident()
        if self.holder is not None or me == io_thread or me == self.draining:
            return False
        if self._wake_r == -1:
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            os.set_blocking(self._wake_w, False)
            # imported here: ctypes is half a megabyte a member that never waits does not need
            from .timerfd import one_shot

            self.timer = one_shot(LOOK_MS / 1000)
        self.holder = me
        # while the reply is still on its way: the leave seldom has to
        self._arm_within(ARM_AT_CLAIM)
        return True

    def leave(self) -> None:
        """Free the seat; the I/O thread takes the socket back within ``LOOK_MS`` unless somebody
        sits down first. No wake-up now: a frame that came after the seated drain (which may end
        on the caller's own frame, without reading ZMQ_EVENTS again) waits at most that long."""
        self.holder = None
        self._arm_within(ARM_AT_LEAVE)

    def _arm_within(self, seconds: float) -> None:
        """Arm the leave timer (to fire ``LOOK_MS`` from now) if it would fire sooner than
        ``seconds`` from now. Else it fires within ``LOOK_MS`` anyway: callers that come and go
        quickly arm it every few round trips, not on each."""
        now = monotonic()
        if self.timer is not None and self._fires - now < seconds:
            self.timer.arm()
            self._fires = now + LOOK_MS / 1000

    @property
    def watched(self) -> bool:
        """True once the I/O thread's wait includes the leave timer: a leave then wakes it within
        ``LOOK_MS`` whether it reads the socket or stands aside."""
        return self.timer is not None and self._io_fds[2] == self.timer.fd

    def io_wait(self, fd: int, wake_fd: int, timeout_ms: int) -> list[tuple[int, int]]:
        """The I/O thread's wait: on the socket's ``fd`` (-1 while it steps aside for a seated
        caller), its ``wake_fd`` and the leave timer, up to ``timeout_ms`` (its own timers;
        stepped aside without a timer, ``LOOK_MS`` at most). Returns what ``poll`` does; a
        fired timer is cleared."""
        timer = -1 if self.timer is None else self.timer.fd
        # rebuilt when one changes: registering costs more than the poll
        if (fd, wake_fd, timer) != self._io_fds:
            self._io, self._io_fds = select.poll(), (fd, wake_fd, timer)
            for each in (fd, wake_fd, timer):
                if each != -1:
                    self._io.register(each, select.POLLIN)
        ready = self._io.poll(min(timeout_ms, LOOK_MS) if fd == -1 and timer == -1 else timeout_ms)
        if self.timer is not None and any(each == timer for each, _ in ready):
            self.timer.clear()
        return ready

    def read_until(self, latch: Latch, timeout: float | None,
                   read: Callable[[Latch, bool], int | None], leave: Callable[[], None],
                   quiet_fd: int | None = None) -> bool:
        """Seated: ``read(latch, fired)`` (drain the socket; its fd, or None once it is closed)
        and poll until ``latch`` is set or the slice ends, then ``leave()``; past the slice, wait
        on the latch. ``fired``: the last poll found the socket's fd readable.
        ``quiet_fd``: the socket's fd when nothing waited at its last ZMQ_EVENTS read and nobody
        called into it since; then the first ``read()`` is skipped and the fd polled at once."""
        deadline = None if timeout is None else monotonic() + timeout
        until = monotonic() + SLICE
        fired = False
        try:
            while not latch.is_set():
                fd, quiet_fd = (read(latch, fired) if quiet_fd is None else quiet_fd), None
                wait = (until - monotonic() if deadline is None
                        else min(until, deadline) - monotonic())
                if fd is None or latch.is_set() or wait <= 0:
                    break
                fired = self._poll(fd, wait)
        except zmq.ZMQError:
            pass  # the socket closed or was replaced under us: the I/O thread carries on
        finally:
            leave()
        return latch.wait(left(deadline))

    def _poll(self, fd: int, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the socket's fd or a wake-up (one seated caller: one
        cached poller, rebuilt with the socket); True when the socket's fd fired."""
        if fd != self._fd:
            self._poller, self._fd = select.poll(), fd
            for each in (fd, self._wake_r):
                self._poller.register(each, select.POLLIN)
        fired = False
        for ready, _ in self._poller.poll(max(int(timeout * 1000), 1)):
            if ready == self._wake_r:
                with contextlib.suppress(BlockingIOError, OSError):
                    os.read(self._wake_r, 4096)
            else:
                fired = True
        return fired


def left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (None: no limit), never negative."""
    return None if deadline is None else max(deadline - monotonic(), 0.0)
