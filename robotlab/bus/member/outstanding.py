"""What a client still waits on.

Each tracked SEND until the broker's receipt, each request until its reply.

:class:`~robotlab.bus.member.client.BusClient` registers a message here as it sends it; the I/O
thread settles it from a RECEIPT, an ERROR or the DELIVER of a reply; a new WELCOME sends again
what no receipt settled; closing the client fails whatever is left.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Final

from ..wire.protocol import Body, Status
from .abandoned_requests import forget_unheld
from .message import Message
from .outgoing_frames import resent
from .tracking import Answered, Tracker

if TYPE_CHECKING:
    from .link import Link

log = logging.getLogger("robotlab.bus")

REQUESTS_MARK: Final = 1024
"""Registered requests past which those whose Tracker nobody holds are forgotten
(abandoned_requests.py)."""


class Outstanding:
    """The client's unsettled sends (with their frames, to send again) and awaited requests.

    ``lock`` is the client's: closing reads these and the admin calls' waiters in one step.
    """

    def __init__(self, lock: threading.Lock, link: Link) -> None:
        self._lock = lock
        self._link = link
        self.unsettled: dict[str, tuple[list[Body], Tracker]] = {}
        self.requests: dict[str, Tracker] = {}
        self._requests_mark = REQUESTS_MARK
        self._answered = Answered()

    def register(self, tracker: Tracker, frames: list[Body], receipt: bool,
                 expect_reply: bool) -> None:
        """Wait for ``tracker``'s receipt (``receipt``) and its reply (``expect_reply``)."""
        with self._lock:
            if receipt:
                self.unsettled[tracker.id] = (frames, tracker)
            if expect_reply:  # registered before sending: a fast reply finds its waiter
                self.requests[tracker.id] = tracker
                if len(self.requests) > self._requests_mark:  # swept when it doubled: O(1) a send
                    self._requests_mark = 2 * forget_unheld(self.requests) + REQUESTS_MARK

    def forget_request(self, message_id: str) -> None:
        """Stop awaiting the reply to ``message_id`` (its caller returned)."""
        with self._lock:
            self.requests.pop(message_id, None)

    def await_replay(self, tracker: Tracker) -> None:
        """Settle ``tracker`` with the fate of a dead letter routed again (no frames to resend)."""
        with self._lock:
            self.unsettled[tracker.id] = ([], tracker)

    def drop(self, message_id: str) -> None:
        """Forget ``message_id`` unsettled (a replay the broker refused)."""
        with self._lock:
            self.unsettled.pop(message_id, None)

    def take_all(self) -> list[Tracker]:
        """Forget everything (the client closes); the trackers that still waited for a receipt."""
        with self._lock:
            pending = [t for _, t in self.unsettled.values()]
            self.unsettled.clear()
            self.requests.clear()
        return pending

    def send_again(self) -> None:
        """Post again every message no receipt settled (a new WELCOME: the broker may not have
        it)."""
        with self._lock:
            unsettled = list(self.unsettled.values())
        # a replay has no frames to resend
        for frames, tracker in (entry for entry in unsettled if entry[0]):
            tracker.sent = True
            self._link.post(resent(frames))

    def settle_reply(self, message: Message, reply_to: str) -> bool:
        """Settle what a reply (to ``reply_to``) answers; True when a waiting request consumed it.
        Only the robot a request went to may answer it: anyone else's ``reply_to`` goes to the
        handler."""
        with self._lock:
            entry = self.unsettled.get(reply_to)
            waiting = self.requests.get(reply_to)
            sender = message.sender
            if ((entry is not None and entry[1].to != sender)
                    or (waiting is not None and waiting.to != sender)):
                return False
            self.unsettled.pop(reply_to, None)
            self.requests.pop(reply_to, None)  # answered: a second reply is Answered's to drop
            again = self._answered.again(reply_to, message.sender, awaited=waiting is not None)
        if entry is not None:
            entry[1].replied(message)  # the broker sends no receipt once a reply proves delivery
        # again: a reply sent twice is dropped; not awaited: the handler gets it (outbox
        # correlation)
        if again or waiting is None:
            return again
        if entry is None and not waiting._replied.is_set():
            waiting.replied(message)
        if message.delivery:
            self._link.ack(message.delivery)
        return True

    def on_receipt(self, header: dict[str, Any]) -> None:
        """Settle the message a RECEIPT names, or send it again later when its receiver was busy."""
        with self._lock:
            entry = self.unsettled.pop(header["id"], None)
            if entry is not None and header["status"] == Status.BUSY and entry[0]:
                delay = entry[1].busy_backoff()
                if delay is not None:  # backpressure: try the same message again shortly
                    self.unsettled[header["id"]] = entry
                    self._link.post_later(delay, entry[0])
                    return
        if entry is not None:
            entry[1].receipt(header)
            self._forget_failed(entry[1])

    def on_error(self, header: dict[str, Any]) -> None:
        """Fail the message an ERROR refers to; an ERROR about none of ours is logged."""
        ref = header.get("ref")
        with self._lock:
            entry = self.unsettled.pop(ref, None) if ref else None
        detail = f"broker refused it ({header.get('code')}): {header.get('detail', '')}"
        if entry is not None:
            entry[1].fail("undeliverable", detail)
            self._forget_failed(entry[1])
        else:
            log.warning("bus: %s", detail)

    def _forget_failed(self, tracker: Tracker) -> None:
        # A failed request gets no reply: its tracker (which the caller holds) stops being awaited.
        if tracker.failed:
            with self._lock:
                self.requests.pop(tracker.id, None)
