"""The broker's admin requests a client waits on: one REQUEST each, answered by one REPLY.

An admin request is not a message: the broker answers it itself (``ping``, ``ps``, ``stats``,
``dlq.list``, ...), nothing about it is journaled or sent again, and a caller that hears nothing
within its timeout gives up (:class:`~robotlab.errors.PeerUnavailable`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from robotlab.errors import BusError, PeerUnavailable

from ..wire import protocol
from ..wire.protocol import Command
from .tracking import Tracker

if TYPE_CHECKING:
    from .link import Link
    from .outstanding import Outstanding


class AdminCalls:
    """Admin requests in flight, by id, and the broker's answers until their callers read them.

    The client's lock guards both: answers arrive on the thread reading the socket."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._waiting: dict[str, Tracker] = {}
        self._answers: dict[str, dict[str, Any]] = {}

    def ask(self, link: Link, request_id: str, op: str, args: dict[str, Any],
            timeout: float) -> Any:
        """Send the request and return the broker's ``result``; see :meth:`BusClient.admin`."""
        tracker = Tracker(request_id, "broker")
        with self._lock:
            self._waiting[request_id] = tracker
        link.post(protocol.encode(Command.REQUEST, {"id": request_id, "op": op, "args": args}))
        try:
            if not link.wait_reading(tracker._settled, timeout):
                raise PeerUnavailable(f"the broker at {link.url} did not answer {op!r} within "
                                      f"{timeout:g}s")
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)
        answer = self._answers.pop(request_id)
        if not answer.get("ok"):
            raise BusError(str(answer.get("error", "refused")))
        return answer.get("result")

    def replay(self, link: Link, outstanding: Outstanding, ids: tuple[str, str], dlq_id: str,
               timeout: float, force: bool) -> Tracker:
        """Ask the broker to route a dead letter again (see :meth:`BusClient.replay`); the
        Tracker returned, named by ``ids[0]`` (``ids[1]`` names the admin request), settles with
        the letter's new fate."""
        message_id, request_id = ids
        tracker = Tracker(message_id, "?")
        tracker.sent = True
        outstanding.await_replay(tracker)
        try:
            result = self.ask(link, request_id, "dlq.replay",
                              {"dlq_id": dlq_id, "ref": message_id, "force": force}, timeout)
        except Exception:
            outstanding.drop(message_id)
            raise
        tracker.to = str(result.get("to", "?"))
        return tracker

    def answered(self, header: dict[str, Any]) -> None:
        """The broker's REPLY: hand it to the caller waiting for it (a late one is dropped)."""
        with self._lock:
            tracker = self._waiting.get(header["id"])
        if tracker is not None:
            self._answers[tracker.id] = header
            tracker._settled.set()

    def waiting(self) -> list[Tracker]:
        """The requests still waiting for an answer (call under the client's lock)."""
        return list(self._waiting.values())
