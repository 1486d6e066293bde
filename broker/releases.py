"""What goes out again: to a member back, the deliveries it had in flight and what was held for
its name; when a hold runs out, a held message to another instance or to the dead letters.

The delivery table (:class:`~robotlab.broker.deliveries.Deliveries`) keeps the state; these are
the steps that hand it out once the members it waited for are back, or will not be. An ``any``
message has an owner, the instance it was handed to (or that claims it after a restart:
:mod:`robotlab.broker.claims`): it is held for that instance (which may be working on it still,
or hold its reply), and goes to another only when the owner does not come back within the
hold, as attempt 2.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from robotlab.bus.wire.protocol import Body, Command, Status

from .claims import Claims
from .holds import Holds
from .journal_contract import NoJournal
from .records import InFlightCopy, Record, deliver_header
from .registry import Peer, Registry


class Table(Protocol):
    """What handing work out again uses of the broker's delivery table."""

    registry: Registry
    holds: Holds[Record, Any]
    claims: Claims | None
    journal: NoJournal
    inflight: dict[int, InFlightCopy]
    ack_timeout: float
    transmit: Callable[[Peer, Command, dict[str, Any], Body], bool]
    deliver: Callable[[Peer, Command, dict[str, Any], Body], bool]

    def start(self, record: Record, targets: list[Peer], now: float,
              until: float | None = None) -> None: ...
    def dispatch(self, record: Record, peer: Peer, attempt: int, tried: set[str]) -> None: ...
    def settle(self, record: Record, instance: str, status: str, detail: str,
               maybe_ran: bool = False) -> None: ...
    def push_deadline(self, due: float, delivery_id: int) -> None: ...


def resend_inflight(table: Table, peer: Peer) -> None:
    """Hand a reconnected instance the deliveries it had in flight (it dedupes by id)."""
    deadline = time.monotonic() + table.ack_timeout
    for delivery_id in sorted(peer.inflight):
        delivery = table.inflight.get(delivery_id)
        if delivery is not None:
            if delivery.deadline < deadline:  # it may have passed while the member was away
                delivery.deadline = deadline
                table.push_deadline(deadline, delivery_id)
            record = delivery.record
            send = table.transmit if record.kept and record.header.get("any") else table.deliver
            send(peer, Command.DELIVER, deliver_header(record.header, delivery.id,
                                                       delivery.attempt), record.body)


def release(table: Table, name: str, now: float) -> None:
    """A member of ``name`` is back, or one of them finished a delivery: dispatch what was held
    for it (held again if it cannot take it). A message an instance of the name owned waits for
    that instance, within its hold; the ``any`` messages nobody owned are shared
    (:func:`_share`)."""
    unowned: list[tuple[float, Record]] = []
    claims, holds, registry = table.claims, table.holds, table.registry
    for until, record in holds.release(name):
        if claims is not None and record.header.get("any") and not claims.decide(record):
            holds.keep(name, record.key, record, until)
            continue
        if record.owner is None:
            if record.header.get("any"):
                unowned.append((until, record))
            else:
                table.start(record, registry.targets(record.header), now, until)
            continue
        owner = registry.by_instance.get(record.owner)
        if owner is not None and owner.name == name:
            table.start(record, [owner], now, until)
        else:
            holds.keep(name, record.key, record, until)
    if unowned:
        _share(table, name, unowned, now)


def _share(table: Table, name: str, held: list[tuple[float, Record]], now: float) -> None:
    """Hand the live instances of ``name`` their share of ``held`` (each to the least loaded),
    keeping the shares of the members still away (gone silent, expected back) held for them:
    the first instance back after a cut does not take everything. What stays held goes out as
    instances come back or finish work, or when its hold runs out."""
    live = table.registry.instances(name)
    coming = sum(1 for _, (member, _) in table.holds.away.values() if member.name == name)
    share = -(-len(held) // (len(live) + coming)) * len(live) if live else 0
    for until, record in held[:share]:
        table.start(record, table.registry.targets(record.header), now, until)
    for until, record in held[share:]:
        table.holds.keep(name, record.key, record, until)


def expire_holds(table: Table, now: float) -> None:
    """Held records whose hold ran out: one whose owner did not come back goes to another
    instance (attempt 2: a robot can see it was redelivered); the rest are dead-lettered. A
    takeover's window that ran out lets go of what waited in it."""
    if table.claims is not None and now >= table.claims.until:
        waiting, table.claims = table.claims.waiting, None
        for name, away in waiting.items():
            for instance in away:  # not back within the hold: its work goes to others now
                table.journal.member_left(instance)
            release(table, name, now)
    for record in table.holds.expired(now):
        owned, record.owner = record.owner is not None, None
        targets = table.registry.targets(record.header) if record.header.get("any") else []
        if targets:
            record.pending = 1
            table.dispatch(record, targets[0], 2 if owned else 1, {targets[0].instance})
            continue
        record.pending = 1
        table.settle(record, "", Status.UNDELIVERABLE, record.nobody(),
                     maybe_ran=record.may_have_run())
