"""The broker's admin requests a client waits on: one REQUEST each, answered by one REPLY.

An admin request is not a message: the broker answers it itself (``ping``, ``ps``, ``stats``,
``dlq.list``, ...), nothing about it is journaled or sent again, and a caller that hears nothing
within its timeout gives up (:class:`~robotlab.errors.PeerUnavailable`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final, Protocol

from robotlab.errors import BusError, PeerUnavailable

from ..wire import protocol
from ..wire.protocol import Body, Command
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
        self._answers: dict[str, tuple[dict[str, Any], Body]] = {}

    def ask(self, link: Link, request_id: str, op: str, args: dict[str, Any],
            timeout: float) -> Any:
        """Send the request and return the broker's ``result``; see :meth:`BusClient.admin`."""
        if link.closed:
            raise PeerUnavailable(f"cannot ask the broker {op!r}: this client is closed")
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
        found = self._answers.pop(request_id, None)
        if found is None:  # woken by the client's close, which fails what waits
            raise PeerUnavailable(f"the broker at {link.url} did not answer {op!r}: "
                                  f"{tracker.detail}")
        answer, body = found
        if not answer.get("ok"):
            raise BusError(str(answer.get("error", "refused")))
        # a large result comes as the body (broker/admin.py)
        return answer["result"] if "result" in answer else protocol.unpack(body) if body else None

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

    def answered(self, header: dict[str, Any], body: Body = b"") -> None:
        """The broker's REPLY, and its body: hand them to the caller waiting for them (a late
        one is dropped)."""
        with self._lock:
            tracker = self._waiting.get(header["id"])
        if tracker is not None:
            self._answers[tracker.id] = (header, body)
            tracker._settled.set()

    def waiting(self) -> list[Tracker]:
        """The requests still waiting for an answer (call under the client's lock)."""
        return list(self._waiting.values())


DEAD_LETTERS_PAGE: Final = 500


class Admin(Protocol):
    """What asks the broker admin questions (a :class:`~robotlab.bus.BusClient`)."""

    def admin(self, op: str, timeout: float = ..., **args: Any) -> Any:
        """The broker's answer to ``op``."""


def dead_letters(client: Admin, timeout: float = 5.0) -> Iterator[dict[str, Any]]:
    """Every dead letter the broker keeps, oldest first, as ``dlq.list`` describes them, asked
    for a page of :data:`DEAD_LETTERS_PAGE` at a time: a queue of any length is listed, each
    answer staying small. A letter replayed or evicted meanwhile may be missing from the list."""
    after = None
    while True:
        page = client.admin("dlq.list", timeout, after=after, limit=DEAD_LETTERS_PAGE)
        yield from page
        if len(page) < DEAD_LETTERS_PAGE:
            return
        after = page[-1]["dlq_id"]
