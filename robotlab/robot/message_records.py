"""What a robot keeps of its messages: the outbox of what it sent (and the replies each got), the
bus ids of its sends, and the inbound messages it may still answer.

One :class:`MessageRecords` per robot, held by its :class:`~robotlab.robot.messaging.RobotBus`;
every method takes its lock, since the caller's thread (sending, asking) and the client's
handler or I/O thread (receiving) both write here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from robotlab.bus.member.message import Message
from robotlab.robot.message import RobotMessage

RECENT_INBOUND = 1024
"""Inbound messages remembered so a later ``send_reply`` still reaches the exact sender instance."""
OUTBOX_LIMIT = 1024
"""Entries the outbox keeps, the newest: an older one is dropped (with its bus id) when a send
would make one more. The original never pruned it; a robot that asks all night then grew by
about 1.4 KB and four objects the collector tracks on every ask, and each of the collector's
full passes took longer (docs/messaging.md, "Sending")."""


class MessageRecords:
    """A robot's message ids, outbox and recent inbound messages."""

    def __init__(self, name: str, limit: int = OUTBOX_LIMIT) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.counter = 0
        """The last message id this robot used (0 before the first)."""
        self.limit = limit
        """How many outbox entries are kept (see :data:`OUTBOX_LIMIT`)."""
        # ordered: the oldest entry is dropped in O(1), as a plain dict's first item is not
        self._outbox: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._sent_ids: dict[str, str] = {}
        # key -> (id, sender, sender instance, to, type, delivery) of an inbound message
        self._inbound: OrderedDict[str, tuple[str, str, str, str, str, int]] = OrderedDict()

    def next_message(self, content: Any, in_reply_to: str | None,
                     record: bool) -> tuple[RobotMessage, dict[str, Any]]:
        """The next message from this robot, and (when ``record``) its outbox entry."""
        entry: dict[str, Any] = {}
        with self.lock:
            self.counter += 1
            message = RobotMessage(self.counter, self.name, content, in_reply_to)
            if record:
                entry.update(message=message, status="sent", replies=[], delivery=None)
                self._outbox[message.key] = entry
                while len(self._outbox) > self.limit:  # one in, one out
                    self._forget(self._outbox.popitem(last=False)[1])
        return message, entry

    def _forget(self, entry: dict[str, Any]) -> None:
        """Drop what else is kept of a dropped outbox entry: its bus id (call under the lock)."""
        tracker = entry["delivery"]
        if tracker is not None:
            self._sent_ids.pop(tracker.id, None)

    def sent(self, entry: dict[str, Any], tracker: Any, key: str) -> None:
        """Note the bus Tracker of a recorded send, and its bus id (a plain reply names it)."""
        with self.lock:
            entry["delivery"] = tracker
            if self._outbox.get(key) is entry:  # else dropped already: its id would stay
                self._sent_ids[tracker.id] = key

    def outbox(self) -> dict[str, dict[str, Any]]:
        """A snapshot of the outbox (see :attr:`RobotBus.outbox
        <robotlab.robot.messaging.RobotBus.outbox>`)."""
        with self.lock:
            return {key: {**entry, "replies": list(entry["replies"])}
                    for key, entry in self._outbox.items()}

    def key_of_sent(self, bus_id: str) -> str:
        """The robot key of this robot's send with the bus id ``bus_id`` (itself if unknown)."""
        with self.lock:
            return self._sent_ids.get(bus_id, bus_id)

    def correlate(self, message: RobotMessage) -> None:
        """Add a reply to the outbox entry of the message it answers."""
        if not message.is_reply:
            return
        with self.lock:
            entry = self._outbox.get(message.in_reply_to or "")
            if entry is not None and message not in entry["replies"]:
                entry["status"] = "replied"
                entry["replies"].append(message)

    def remember(self, key: str, message: Message) -> None:
        """Keep what a reply to ``key`` needs of an inbound bus message, so that it goes back to
        its sender: who sent it, from which process, its id, type and delivery. Not its content
        nor its body: a robot remembers the last :data:`RECENT_INBOUND` messages it got, and
        those may be large."""
        kept = (message.id, message.sender, message.sender_instance, message.to, message.type,
                message.delivery)
        with self.lock:
            self._inbound[key] = kept
            if len(self._inbound) > RECENT_INBOUND:  # one in, at most one out
                self._inbound.popitem(last=False)

    def inbound(self, key: str | None) -> Message | None:
        """The inbound bus message remembered under ``key``, if it still is, without its content
        (None) and body."""
        with self.lock:
            kept = self._inbound.get(key or "")
        if kept is None:
            return None
        message_id, sender, instance, to, kind, delivery = kept
        return Message(message_id, sender, instance, to, kind, None, delivery=delivery)
