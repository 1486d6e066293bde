"""Stop signals handled on a thread of their own, never inside the interrupted code.

CPython runs a signal's Python handler on the main thread, at its next bytecode. That is unsafe
and it can be late:

- The main thread may be inside ``threading.Event.wait`` with the event's lock held; a handler
  that sets the same event (or takes any lock the main thread holds) then waits on its own
  thread forever. ``robot-to`` did, about once in thirty Ctrl-Cs sent the moment a backoff began.
- A signal that arrives just before the main thread blocks in a lock's timed wait is not
  handled until that wait times out: ``robot-to`` slept its whole 30 s step through a Ctrl-C.

So the Python handlers installed here do nothing. The interpreter's C-level handler, which runs
at once on whatever thread the kernel chose, writes each signal's number to a wakeup pipe
(``signal.set_wakeup_fd``); a daemon thread reads the pipe and calls the real handler, which
may take any lock, log, or kill process groups.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)

OnSignal = Callable[[int], None]
"""What to do about a signal, given its number; runs on the relay's thread."""


class SignalRelay:
    """Hands each of ``signums`` to ``on_signal`` on a daemon thread, as soon as it arrives.

    Install it from the main thread (only there can Python install handlers); :meth:`restore`
    puts the previous handlers and wakeup fd back and ends the thread. A wakeup fd that was set
    before (asyncio's, for one) still receives every signal's number. A forked child gets the
    handlers back that were there before, and relays nothing to its parent.
    """

    def __init__(self, on_signal: OnSignal, signums: Iterable[int]) -> None:
        self.on_signal = on_signal
        self.signums = frozenset(signums)
        self._previous: dict[int, Any] = {}
        self._previous_wakeup = -1
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)  # set_wakeup_fd requires it: a flood is dropped
        self._thread = threading.Thread(target=self._relay, name="signal-relay", daemon=True)

    def install(self) -> SignalRelay:
        """Start the thread, then route the signals through it; returns ``self``."""
        self._thread.start()
        self._previous_wakeup = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        for signum in self.signums:
            self._previous[signum] = signal.signal(signum, _ignore)
        _installed.append(self)
        return self

    def restore(self) -> None:
        """Put back the handlers and wakeup fd that were there before, and end the thread."""
        self._put_back()
        os.close(self._write_fd)  # the thread reads end-of-file and returns
        self._thread.join()
        os.close(self._read_fd)

    def _put_back(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
        signal.set_wakeup_fd(self._previous_wakeup)
        with contextlib.suppress(ValueError):
            _installed.remove(self)

    def _relay(self) -> None:
        while signums := os.read(self._read_fd, 64):
            if self._previous_wakeup != -1:
                with contextlib.suppress(OSError):
                    os.write(self._previous_wakeup, signums)
            for signum in signums:
                if signum in self.signums:
                    self._handle(signum)

    def _handle(self, signum: int) -> None:
        try:
            self.on_signal(signum)
        except Exception:  # one failing handler must not end the relay for later signals
            log.exception("handling signal %s failed", signal.Signals(signum).name)


_installed: list[SignalRelay] = []
"""The relays in force, the newest last."""


def _forget_in_child() -> None:
    """A forked child does not have the relays' threads: it gets the handlers back that were
    there before them, and no wakeup fd (the pipe is its parent's)."""
    if _installed and threading.current_thread() is threading.main_thread():
        for relay in reversed(list(_installed)):
            relay._put_back()
        signal.set_wakeup_fd(-1)


os.register_at_fork(after_in_child=_forget_in_child)


def _ignore(_signum: int, _frame: Any) -> None:
    """The Python-level handler: the work is the relay's (a handler must exist for the
    interpreter's C-level one to write to the wakeup fd)."""
