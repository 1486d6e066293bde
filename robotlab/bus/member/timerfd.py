"""A one-shot timer a thread can poll: Linux's ``timerfd`` (through ctypes: ``os.timerfd_create``
arrived in Python 3.13), so that one thread can wake another later without waking it now.

The reader's seat (:mod:`robotlab.bus.member.reader_seat`) arms it when a caller leaves: the I/O
thread, which stepped aside, takes the socket back only if no caller sat down again before it
fires, and is not woken at all while callers come and go faster than that.
"""

from __future__ import annotations

import contextlib
import ctypes
import os

_CLOCK_MONOTONIC = 1
_TFD_FLAGS = os.O_NONBLOCK | os.O_CLOEXEC  # TFD_NONBLOCK and TFD_CLOEXEC have the same values


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc() -> ctypes.PyDLL | None:
    # PyDLL: the call keeps the GIL (releasing it around a sub-microsecond system call would hand
    # it to a waiting thread, the very wake-up this timer is there to save).
    try:
        libc = ctypes.PyDLL(None, use_errno=True)
        libc.timerfd_create.argtypes = [ctypes.c_int, ctypes.c_int]
        # No argtypes for timerfd_settime: its arguments (two ints, a byref, None) convert as
        # they are, where declared ones go through from_param each, which doubled the cost of
        # an arm (a seated caller's leave runs one every few round trips)
        libc.timerfd_settime.restype = ctypes.c_int
    except (OSError, AttributeError):  # not Linux (or no such symbol): callers fall back to polling
        return None
    return libc


_LIBC = _libc()


class OneShot:
    """A timerfd that becomes readable ``seconds`` after each :meth:`arm` (each arm restarts it)."""

    __slots__ = ("fd", "_spec", "_spec_ref")

    def __init__(self, seconds: float) -> None:
        if _LIBC is None:
            raise OSError("timerfd is not available on this system")
        fd = _LIBC.timerfd_create(_CLOCK_MONOTONIC, _TFD_FLAGS)
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"timerfd_create: {os.strerror(ctypes.get_errno())}")
        self.fd: int = fd
        whole = int(seconds)
        self._spec = _Itimerspec(_Timespec(0, 0), _Timespec(whole, int((seconds - whole) * 1e9)))
        # made once: arm runs whenever a caller leaves its seat
        self._spec_ref = ctypes.byref(self._spec)

    def arm(self) -> None:
        """Fire once, ``seconds`` from now (a pending expiry is pushed back)."""
        _LIBC.timerfd_settime(self.fd, 0, self._spec_ref, None)  # type: ignore[union-attr]

    def clear(self) -> None:
        """Consume an expiry, so that the fd polls as not readable until the next one."""
        with contextlib.suppress(BlockingIOError, OSError):
            os.read(self.fd, 8)

    def close(self) -> None:
        """Close the fd."""
        with contextlib.suppress(OSError):
            os.close(self.fd)


def one_shot(seconds: float) -> OneShot | None:
    """A :class:`OneShot`, or None where timerfd is not available (then poll on a timeout
    instead)."""
    try:
        return OneShot(seconds)
    except OSError:
        return None
