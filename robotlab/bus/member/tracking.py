"""Outbound state: a Tracker per sent message, settled by the broker's receipt or a reply."""

from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from time import monotonic
from typing import Any, Final

from robotlab.errors import DeliveryFailed, DeliveryTimeout, ReplyTimeout, delivery_error

from .message import Message
from .pending_signals import run_pending_signal_handlers

_LATCH_LOCK: Final = threading.Lock()
ANSWERED_LIMIT: Final = 10_000
WAIT_STEP_SECONDS: Final = 0.5
"""A latch waiter's longest single block. A signal that came just before the block, or that the
kernel gave another thread, runs its Python handler (Ctrl-C's ``KeyboardInterrupt``) only once
the waiting thread wakes and runs bytecode (``pending_signals``): this is how late that can be,
not a whole request's time-out."""


class Latch:
    """A one-shot event built on one plain lock, allocated only when somebody has to wait.

    Most trackers settle before anyone waits on them (or are never waited on). A waiter holds
    the latch's lock locked until :meth:`set` releases it; ``threading.Event`` costs a
    Condition, its lock and a fresh waiter lock per wait (see docs/benchmarks.md for the count).
    """

    __slots__ = ("_set", "_gate")

    def __init__(self) -> None:
        self._set = False
        self._gate: threading.Lock | None = None

    def set(self) -> None:
        """Release every waiter, now and later."""
        with _LATCH_LOCK:  # two setters must not both release the gate
            if self._set:
                return
            self._set = True
            gate = self._gate
        if gate is not None:
            gate.release()

    def is_set(self) -> bool:
        """True once set."""
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Block until set; False on timeout."""
        if self._set:
            return True
        with _LATCH_LOCK:
            if self._set:
                return True
            if self._gate is None:
                self._gate = threading.Lock()
                self._gate.acquire()  # held until set() releases it
            gate = self._gate
        deadline = None if timeout is None else monotonic() + max(timeout, 0.0)
        while True:
            step = WAIT_STEP_SECONDS if deadline is None else min(deadline - monotonic(),
                                                                   WAIT_STEP_SECONDS)
            if gate.acquire(timeout=max(step, 0.0)):
                gate.release()  # pass it on: other waiters, and later waits, get through at once
                return True
            if deadline is not None and monotonic() >= deadline:
                return self._set
            run_pending_signal_handlers()  # compiled, this loop runs none by itself


class Flag:
    """``threading.Event`` whose :meth:`is_set` is a native attribute read when compiled.

    The link asks whether it is welcomed on every send and loop turn; Event's ``is_set`` is a
    Python method. Set and clear keep the flag and the event in step (the flag first on set, so
    a woken waiter never reads it unset)."""

    __slots__ = ("_flag", "_event")

    def __init__(self) -> None:
        self._flag = False
        self._event = threading.Event()

    def set(self) -> None:
        """Set it and wake every waiter."""
        self._flag = True
        self._event.set()

    def clear(self) -> None:
        """Unset it."""
        self._flag = False
        self._event.clear()

    def is_set(self) -> bool:
        """True while set."""
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        """Block until set; False on timeout."""
        return self._event.wait(timeout)


class Tracker:
    """The fate of one sent message: pending, then delivered or failed.

    ``wait`` blocks until the broker's receipt arrives. For a request, ``reply`` blocks until
    the answer arrives and says, when it times out, what became of the request. ``instances``
    are the instances that had a copy; ``failed_copies`` the (instance, status, detail) of each
    copy that failed (a message sent to every instance of a name fails if one copy did).
    """

    def __init__(self, message_id: str, to: str, busy_retry: float = 0.0,
                 waiter: Callable[[Latch, float | None], bool] = Latch.wait) -> None:
        self.id = message_id
        self.to = to
        self.status = "pending"
        self.detail = ""
        self.dlq_id: str | None = None
        self.instances: list[str] = []
        self.failed_copies: list[tuple[str, ...]] = []
        self.sent = False
        self._busy_until = monotonic() + busy_retry
        self._busy_delay = 0.005
        self._reply: Message | None = None
        self._settled = Latch()
        self._replied = Latch()
        self.waiter = waiter
        """How a caller waits on this tracker's latches: a client's link reads the socket
        meanwhile (:meth:`~robotlab.bus.member.link.Link.wait_reading`)."""

    # -- settled by the I/O thread --------------------------------------------------------------

    def receipt(self, header: dict[str, Any]) -> None:
        """Record the broker's RECEIPT."""
        self.status = str(header["status"])
        self.detail = str(header.get("detail", ""))
        self.dlq_id = header.get("dlq_id")
        self.instances = list(header.get("instances", []))
        self.failed_copies = [tuple(copy) for copy in header.get("failed", [])]
        self._settled.set()
        if self.failed:
            self._replied.set()  # no reply is coming

    def replied(self, message: Message) -> None:
        """Record the reply; a reply proves delivery."""
        self._reply = message
        if self.status == "pending":
            self.status = "delivered"
            self.instances = [message.sender_instance]
        self._settled.set()
        self._replied.set()

    def busy_backoff(self) -> float | None:
        """The delay before resending after a ``busy`` receipt, or None once out of patience."""
        if monotonic() + self._busy_delay > self._busy_until:
            return None
        delay = self._busy_delay * random.uniform(0.5, 1.5)
        self._busy_delay = min(self._busy_delay * 2, 0.5)
        return delay

    def fail(self, status: str, detail: str) -> None:
        """Fail locally (oversized, connection closed)."""
        self.receipt({"status": status, "detail": detail})

    # -- read by the application ------------------------------------------------------------

    @property
    def failed(self) -> bool:
        """True once the message is known not to have been delivered."""
        return self.status not in ("pending", "delivered")

    @property
    def settled(self) -> bool:
        """True once delivered or failed."""
        return self._settled.is_set()

    def error(self) -> DeliveryFailed:
        """The exception that describes this failure."""
        return delivery_error(self.status, self.detail, message_id=self.id, to=self.to,
                              dlq_id=self.dlq_id)

    def wait(self, timeout: float | None = None) -> Tracker:
        """Block until delivered; return self.

        Raises:
            DeliveryFailed: the subclass for the broker's reason (Undeliverable, Nacked, Busy,
                DeliveryTimeout), or DeliveryTimeout when no receipt came within ``timeout``.
        """
        if not self.waiter(self._settled, timeout):
            raise DeliveryTimeout(f"no receipt within {timeout:g}s ({self.describe()})",
                                  message_id=self.id, to=self.to)
        if self.failed:
            raise self.error()
        return self

    def reply(self, timeout: float | None = None, deadline: float | None = None) -> Message:
        """Block until the reply arrives and return it.

        Raises:
            DeliveryFailed: the request itself failed.
            ReplyTimeout: no reply in time, or (given the request's ``deadline``, wall-clock
                seconds) a failure reported once that deadline had passed; its message says
                what became of the request.
        """
        if not self.waiter(self._replied, timeout):
            raise ReplyTimeout(f"no reply from {self.to} within {timeout:g}s: {self.describe()}",
                               delivery=self.status)
        if self._reply is None:
            failure = self.error()
            # Refused once its deadline had passed (a model call cut there, say): what ended it
            # is the time-out the caller chose, as if the refusal had come a moment later.
            if deadline is not None and time.time() >= deadline:
                raise ReplyTimeout(f"no reply from {self.to} by the request's deadline: the "
                                   f"request was {failure.reason} at it: {failure.detail}",
                                   delivery=failure.reason)
            raise failure
        return self._reply

    def describe(self) -> str:
        """Where the message stands, in words."""
        if not self.sent:
            return "the request never reached the broker (not connected)"
        if self.status == "pending":
            return (f"the request reached the broker and is still in flight to {self.to} "
                    "(not acked yet)")
        if self.status == "delivered":
            who = ", ".join(self.instances) or self.to
            return f"the request was delivered and acked by {who}, but no reply came"
        return f"the request was {self.status}: {self.detail}"


class Answered:
    """Requests whose reply a waiting request took, by id, with the robot that answered (bounded).

    A member keeps its replies until the broker confirms them and may answer a redelivered
    request again from its reply cache, so a requester can see a second reply: it is dropped.
    """

    def __init__(self, limit: int = ANSWERED_LIMIT) -> None:
        self.limit = limit
        self._by_request: OrderedDict[str, str] = OrderedDict()

    def again(self, request_id: str, sender: str, awaited: bool) -> bool:
        """True for a second reply from ``sender`` to a request already answered; else note it."""
        if not awaited:
            return self._by_request.get(request_id) == sender
        self._by_request[request_id] = sender
        while len(self._by_request) > self.limit:
            self._by_request.popitem(last=False)
        return False
