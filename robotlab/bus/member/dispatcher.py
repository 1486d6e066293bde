"""Runs a client's inbound handler on one thread, one message at a time, in arrival order.

It also dedupes: a message seen before (same sender instance and id, e.g. resent after a
reconnect) is acked again without running the handler twice.

A handler declared ``inline`` (:func:`inline`, or ``on_message(..., inline=True)``) runs on the
client's I/O thread instead, as each message is read: no hand-off to the handler thread, which
was about a quarter of a receiver's work per message. It must be quick (while it runs, nothing
else of the client's bus moves: no heartbeats, no acks) and must not wait on the bus.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, Protocol

from robotlab.observability.logfields import HANDLING

from ..wire import protocol
from ..wire.protocol import ID_MAX, Body
from . import message_spans
from .message import Delivery, Message


class Owner(Protocol):
    """What a dispatcher uses of the client that owns it (``BusClient`` is one)."""

    name: str
    instance: str

    def reply(self, message: Message, content: Any, *, type: str = "reply") -> Any:
        """Answer ``message`` to its sender."""

    def send_reply(self, message: Message, body: Body, type: str = "reply") -> Any:
        """Answer ``message`` with a body packed already (a cached reply)."""

    def settle_delivery(self, delivery: int, nack_reason: str | None = None) -> None:
        """ACK ``delivery`` to the broker, or NACK it with ``nack_reason``."""

log = logging.getLogger("robotlab.bus")

SEEN_LIMIT: Final = 10_000
_RUNNING: Final = object()
"""What :meth:`Dispatcher._again` says of a duplicate whose original has not finished yet."""
REPLY_CACHE_LIMIT: Final = 1_000
REPLY_CACHE_BYTES: Final = 64 * 1024 * 1024
"""The most the reply cache holds in bodies, by default (:attr:`Dispatcher.reply_cache_bytes`):
past it the oldest replies go, but never the newest. By count alone, a member answering with
bodies near the broker's 16 MiB limit would have kept 1,000 of them: 16 GB."""
CLAIM_BYTES: Final = 2 * (ID_MAX + 3) + 1
"""The most one claimed key takes packed (two strings of at most ``ID_MAX`` characters)."""


INLINE: Final = "robotlab_inline"
"""The attribute :func:`inline` sets on a handler."""


def inline(handler: Callable[..., Any]) -> Callable[..., Any]:
    """Declare ``handler`` quick and non-blocking: the client runs it on its I/O thread.

    For handlers that compute an answer from the message alone in well under a heartbeat
    interval (an echo, a lookup), never for ones that wait on the bus or on a model.
    """
    setattr(handler, INLINE, True)
    return handler


def _ignore(message: Message) -> None:
    return None


def _drop_queued(pending: queue.SimpleQueue) -> None:
    """Empty ``pending`` and post the stop marker: the handler thread stops after its current
    message."""
    while True:
        try:
            pending.get_nowait()
        except queue.Empty:
            break
    pending.put(None)


class Dispatcher:
    """The handler thread of one BusClient."""

    def __init__(self, client: Owner) -> None:
        self.client = client
        self.handler: Any = _ignore
        self.manual = False
        self.inline = False
        """Run the handler on the I/O thread, in :meth:`submit` (see the module docstring)."""
        self.not_inline: Callable[[Message], bool] | None = None
        """With :attr:`inline`: the messages still handed to the handler thread (those a robot
        answers by running its model), when this says so of them."""
        self._queue: queue.SimpleQueue[Message | None] = queue.SimpleQueue()
        # (sender instance, id) -> None once handled, or the extra delivery ids that arrived
        # for it while it was still queued or running (acked together when it finishes).
        self._seen: OrderedDict[tuple[str, str], list[int] | None] = OrderedDict()
        self._unacked: set[int] = set()
        self._working: set[int] = set()  # queued or in a running handler: touched while so
        self._in_hand: int | None = None  # the delivery the handler thread is running
        # packed reply, type
        self._replies: OrderedDict[tuple[str, str], tuple[Body, str]] = OrderedDict()
        self._reply_bytes = 0  # the bodies' sizes in _replies, summed
        self.reply_cache_bytes = REPLY_CACHE_BYTES
        """The most the reply cache holds in bodies (see :data:`REPLY_CACHE_BYTES`); a duplicate
        of a request whose reply has left the cache is acked, not answered nor run again."""
        self._lock = threading.Lock()
        self._handler_thread = threading.Thread(target=self._run,
                                                name=f"robotlab-handler-{client.name}", daemon=True)

    def start(self) -> None:
        """Start the handler thread."""
        self._handler_thread.start()

    def stop(self, drain: float | None = 5.0) -> None:
        """Finish the message in hand (waiting up to ``drain`` s), skip the queued ones, stop."""
        with self._lock:
            # Queued messages will not run: stop asking the broker to wait for them. The one in
            # hand is let finish, so it is still touched, or a drain longer than the ack
            # timeout would dead-letter work that then completes.
            self._working.intersection_update({self._in_hand})
        _drop_queued(self._queue)
        if (self._handler_thread.is_alive()
                and threading.current_thread() is not self._handler_thread):
            self._handler_thread.join(timeout=drain)

    def submit(self, message: Message) -> None:
        """Queue an inbound message (called by the I/O thread); answer duplicates from the cache."""
        key, delivery, inline = (message.sender_instance, message.id), message.delivery, self.inline
        if inline and self.not_inline is not None and self.not_inline(message):
            inline = False
        with self._lock:  # one acquisition for a new message: an inline one is in hand from here
            first = key not in self._seen
            if first:
                self._seen[key] = [delivery]
                while len(self._seen) > SEEN_LIMIT:
                    self._seen.popitem(last=False)
                if delivery:  # 0: an untracked delivery (a reply), nothing to ack
                    self._unacked.add(delivery)
                    self._working.add(delivery)
                if inline:
                    self._in_hand = delivery
            else:
                cached = self._again(key, delivery)
        if first and inline:
            self._process(message, in_hand=True)
        elif first:
            self._queue.put(message)
        elif cached is not _RUNNING:
            self._answer_again(message, cached)

    def _again(self, key: tuple[str, str], delivery: int) -> Any:
        """A duplicate, under the lock: noted beside the original while that is still queued or
        running (``_RUNNING``: settled with it); else its cached reply (None: just ack it)."""
        extras = self._seen[key]
        if extras is not None:
            if delivery != extras[0]:
                extras.append(delivery)
            return _RUNNING
        cached = self._replies.get(key)
        if cached is not None:
            self._unacked.add(delivery)  # the reply sent again carries this delivery's ack
        return cached

    def claim_reply(self, message: Message, body: Body, type: str) -> int | None:
        """Keep the reply to ``message`` (its packed body: what is sent, whatever happens to the
        content after) so that a duplicate is answered again, not re-run; and take over acking
        ``message``, as :meth:`claim_ack` does, in the same step."""
        key, delivery = (message.sender_instance, message.id), message.delivery
        with self._lock:
            replaced = self._replies.get(key)
            if replaced is not None:
                self._reply_bytes -= len(replaced[0])
            self._replies[key] = (body, type)
            self._reply_bytes += len(body)
            while len(self._replies) > REPLY_CACHE_LIMIT or (
                    self._reply_bytes > self.reply_cache_bytes and len(self._replies) > 1):
                self._reply_bytes -= len(self._replies.popitem(last=False)[1][0])
            if delivery in self._unacked:
                self._unacked.discard(delivery)
                return delivery
        return None

    def _answer_again(self, message: Message, cached: tuple[Body, str] | None) -> None:
        """A duplicate of a handled message: re-send its cached reply, or just ack it."""
        if cached is None:
            if message.delivery:
                self.client.settle_delivery(message.delivery)
        else:
            self.client.send_reply(message, cached[0], cached[1])

    def holding(self) -> list[int]:
        """Deliveries queued or in a running handler, not yet settled: the broker is told to wait.

        A manual handler that returns without settling stops being touched: from then on the
        broker's ack timeout applies, as it does to a receiver that went quiet.
        """
        with self._lock:
            return list(self._working & self._unacked)

    def claims(self, limit: int) -> Body:
        """The keys (sender instance, id) of the messages this member still remembers having
        had, working on them or done, packed: a HELLO's body, for a broker that took over from
        another and asks who holds what (the broker's ``claims.py``); empty when there are none.
        The newest that surely fit in ``limit`` bytes: a broker drops a connection whose message
        is larger than its maximum, and the HELLO would never get through."""
        with self._lock:
            seen = list(self._seen)
        seen = seen[-(limit // CLAIM_BYTES):] if limit >= CLAIM_BYTES else []
        return protocol.pack(seen) if seen else b""

    def claim_ack(self, message: Message) -> int | None:
        """Take over acking ``message`` (a reply carries the ack); None if already acked."""
        with self._lock:
            if message.delivery in self._unacked:
                self._unacked.discard(message.delivery)
                return message.delivery
        return None

    # -- the handler thread ---------------------------------------------------------------------

    def _run(self) -> None:
        while (message := self._queue.get()) is not None:
            self._process(message)

    def _process(self, message: Message, in_hand: bool = False) -> None:
        """Run the handler on one message and settle it (and any duplicate that came meanwhile);
        ``in_hand``: :meth:`submit` marked it so already."""
        if not in_hand:
            with self._lock:
                self._in_hand = message.delivery
        # Lines logged while the handler runs name the robot and the message (JSON logs): the
        # context variable itself, one C call each way, not a function of the interpreted module.
        token = HANDLING.set((self.client.name, self.client.instance, message.id))
        try:
            if message_spans.traced():
                message_spans.handle(self.client.name, message,
                                     self._handle_manual if self.manual else self._handle_auto)
            elif self.manual:
                self._handle_manual(message)
            else:
                self._handle_auto(message)
        finally:
            HANDLING.reset(token)
        key = (message.sender_instance, message.id)
        with self._lock:
            self._in_hand = None
            self._working.discard(message.delivery)
            extras = self._seen.get(key)
            self._seen[key] = None
        if extras is not None and len(extras) > 1:
            for delivery in extras[1:]:
                if delivery != message.delivery:
                    self.client.settle_delivery(delivery)

    def _handle_auto(self, message: Message) -> None:
        try:
            result = self.handler(message)
            if hasattr(result, "__await__"):
                raise TypeError("the handler returned an awaitable; bus handlers are plain "
                                "functions")
        except Exception as exc:
            log.warning("bus: handler of %s failed on %s: %s", self.client.name, message.key, exc)
            self._nack(message, f"{type(exc).__name__}: {exc}")
            return
        if result is None or message.reply_to is not None:
            self._ack(message)
            return
        try:
            self.client.reply(message, result)  # it carries the ack: nothing else to settle
        except Exception as exc:  # e.g. a reply that cannot cross the boundary
            self._nack(message, f"the reply could not be sent: {type(exc).__name__}: {exc}")

    def _handle_manual(self, message: Message) -> None:
        delivery = Delivery(message, lambda state, reason: self._settle(message, state, reason))
        try:
            self.handler(delivery, message)
        except Exception as exc:
            log.warning("bus: handler of %s failed on %s: %s", self.client.name, message.key, exc)
            if delivery.pending:
                delivery.nack(f"{type(exc).__name__}: {exc}")

    def _settle(self, message: Message, state: str, reason: str) -> None:
        if state == "acked":
            self._ack(message)
        else:
            self._nack(message, reason)

    def _ack(self, message: Message) -> None:
        if self.claim_ack(message) is not None:
            self.client.settle_delivery(message.delivery)

    def _nack(self, message: Message, reason: str) -> None:
        if self.claim_ack(message) is not None:
            self.client.settle_delivery(message.delivery, reason)
