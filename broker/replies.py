"""Replies on their way to a requester: delivered at once, held while it is away, dropped once it
left.

A reply is ``untracked``: the requester's resend of its request is its retry, so a reply to a
live requester needs no in-flight entry and no record. A reply whose requester is away is held
for it, and journaled, since the member that sent it has forgotten it; so is a reply to a name
this broker has never seen (a restarted broker knows no client by name: they are made up per
run, and not journaled), since its requester may reconnect after the member that answers it.
A reply whose requester said BYE is dropped (and counted): nobody will read it.

A requester's connection can also go under the send: the reply's DELIVER fails because its
socket just closed, while its BYE, queued behind other members' frames, is read later in the
turn. Such a reply is held as for a requester away, not dead-lettered: when the BYE is read
(:meth:`Replies.departed`) it is dropped, and a requester that comes back gets it. So a
duplicate reply (a member's kept reply sent again after a failover) never becomes a dead letter
for a client that had its answer and left.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from time import monotonic
from typing import Any, Final, Protocol

from robotlab.bus.wire.protocol import Body, Command, Status

from .holds import Holds
from .journal import NoJournal
from .records import Record, deliver_header
from .registry import Peer

RECENT_REPLIES: Final = 4096
"""Reply keys remembered, so a reply sent again after a reconnect is delivered once."""


class Table(Protocol):
    """What the reply path uses of the broker's delivery table
    (:class:`~robotlab.broker.deliveries.Deliveries`)."""

    deliver: Callable[[Peer, Command, dict[str, Any], Body], bool]
    holds: Holds[Record, Any]
    journal: NoJournal
    active: dict[tuple[str, str], Record]
    counters: dict[str, int]

    def keep(self, record: Record) -> None: ...
    def start(self, record: Record, targets: list[Peer], now: float,
              until: float | None = None) -> None: ...
    def settle(self, record: Record, instance: str, status: str, detail: str,
               maybe_ran: bool = False) -> None: ...


class Replies:
    """The reply path of a broker's :class:`~robotlab.broker.deliveries.Deliveries`."""

    def __init__(self, deliveries: Table) -> None:
        self.deliveries = deliveries
        self._recent: OrderedDict[tuple[str, str], None] = OrderedDict()

    def route(self, header: dict[str, Any], body: Body, notify: str | None, key: tuple[str, str],
              receipt_id: str, targets: list[Peer], span: Any, header_bytes: int = 0) -> None:
        """Deliver a reply to its live requester, hold it for one away, drop it for one that
        left."""
        if key in self._recent:
            return  # sent again after a reconnect
        self._recent[key] = None
        while len(self._recent) > RECENT_REPLIES:
            self._recent.popitem(last=False)
        deliveries = self.deliveries
        if not targets and header.get("to_instance") in deliveries.holds.departed:
            deliveries.counters["replies_dropped"] += 1
            return
        if targets and self.send(header, body, key, receipt_id, targets):
            return
        record = Record(header, body, notify, key, receipt_id, span=span,
                        header_bytes=header_bytes)
        deliveries.keep(record)
        now = monotonic()
        # Held even for a name this broker never saw: a restarted broker knows no client, and a
        # requester may well reconnect after the member that answers it.
        deliveries.start(record, [], now, deliveries.holds.until(header, now, expected=True))

    def send(self, header: dict[str, Any], body: Body, key: tuple[str, str], receipt_id: str,
             targets: list[Peer]) -> bool:
        """DELIVER without an in-flight entry; False when the one requester's connection went
        under the send (the caller holds the reply). Any other copy that fails is dead-lettered."""
        deliveries, deliver = self.deliveries, deliver_header(header, 0, 1)
        for peer in targets:
            if deliveries.deliver(peer, Command.DELIVER, deliver, body):
                continue
            if len(targets) == 1 and header.get("to_instance") == peer.instance:
                return False
            deliveries.settle(Record(header, body, None, key, receipt_id, pending=1), peer.instance,
                              Status.UNDELIVERABLE,
                              f"{peer.name} ({peer.instance}) cannot be reached")
        return True

    def release(self, record: Record, targets: list[Peer], until: float | None) -> None:
        """Send a held reply to its requester, back; held on if its connection goes under the
        send."""
        deliveries = self.deliveries
        if not self.send(record.header, record.body, record.key, record.receipt_id, targets):
            until = until if until is not None else monotonic() + deliveries.holds.seconds
            deliveries.holds.hold(record.header["to"], record.key, record, until)
            return
        if record.kept:  # out at last: its requester dedupes a second copy
            deliveries.active.pop(record.key, None)
            deliveries.journal.settle(record.key)
            record.kept = False

    def departed(self, peer: Peer) -> None:
        """``peer`` said BYE: the replies held for it are dropped (nobody will read them); what
        else is held for its name stays held."""
        deliveries = self.deliveries
        for until, record in deliveries.holds.release(peer.name):
            if not (record.header.get("untracked")
                    and record.header.get("to_instance") == peer.instance):
                deliveries.holds.keep(peer.name, record.key, record, until)
                continue
            deliveries.counters["replies_dropped"] += 1
            deliveries.active.pop(record.key, None)
            if record.kept:
                deliveries.journal.settle(record.key)
                record.kept = False
