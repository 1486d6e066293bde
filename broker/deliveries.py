"""Routing and the in-flight table: every message is delivered, acked, or dead-lettered with a
reason.

A SEND becomes a :class:`Record`; each copy of it handed to a robot instance is a
:class:`InFlightCopy` until the instance ACKs or NACKs it, its ack timeout passes, or the
instance is lost. When every copy is settled the sender gets one RECEIPT
(``delivered``, or the first failure's reason), unless the receiver's reply already proved
delivery. Idempotent messages are retried (on another instance when there is one) before they
are dead-lettered.

Two collaborators make this survive restarts and partitions: the journal
(:mod:`robotlab.broker.journal`) keeps every tracked record until it settles, and the holds
(:mod:`robotlab.broker.holds`) keep records for a name whose members are away, and the
in-flight deliveries of a member gone silent, instead of failing them at once (see
:mod:`robotlab.broker.releases` for how they go out again).
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable
from heapq import heappop, heappush
from time import monotonic
from typing import Any, Final

from robotlab.bus.wire.protocol import Body, Command, Status
from robotlab.observability import spans, tracing

from .claims import Claims
from .dlq import DeadLetterQueue
from .holds import Holds
from .journal import ROW_BYTES, NoJournal
from .outbox import Outcome, receipt, settled_status
from .records import InFlightCopy, Record, deliver_header
from .registry import Peer, Registry
from .releases import release
from .replies import Replies

MAX_ATTEMPTS: Final = 3
RECENT_RECEIPTS: Final = 4096
DEADLINE_SLACK: Final = 4096
"""Stale ack-deadline entries allowed beyond twice the deliveries in flight before the heap is
rebuilt."""

Transmit = Callable[[Peer, Command, dict[str, Any], Body], bool]


class Deliveries:
    """The broker's delivery state: records, in-flight copies, ack deadlines, recent receipts."""

    def __init__(self, registry: Registry, dlq: DeadLetterQueue, transmit: Transmit,
                 ack_timeout: float, max_handling: float = float("inf"),
                 journal: NoJournal | None = None, holds: Holds[Record, Any] | None = None,
                 deliver: Transmit | None = None) -> None:
        self.registry = registry
        self.dlq = dlq
        self.transmit = transmit
        """How receipts leave (the broker's waits for the journal's commit)."""
        self.deliver = deliver or transmit
        """How DELIVERs leave: at once (the broker skips the outbox's check for receipts)."""
        self.ack_timeout = ack_timeout
        self.max_handling = max_handling
        self.journal = journal if journal is not None else NoJournal()
        self.holds: Holds[Record, Any] = holds if holds is not None else Holds(0.0)
        self.inflight: dict[int, InFlightCopy] = {}
        self.active: dict[tuple[str, str], Record] = {}
        self.recent: OrderedDict[tuple[str, str], Outcome] = OrderedDict()
        self.replies = Replies(self)
        self.counters: dict[str, int] = {"routed": 0, "delivered": 0, "nacked": 0, "timeouts": 0,
                                         "dead_lettered": 0, "held": 0, "journal_full": 0,
                                         "replies_dropped": 0}
        # Ids start from the clock, so an ack meant for a broker before a restart cannot settle
        # a delivery of this one: at a microsecond a tick, the count never catches up with time.
        self._ids = itertools.count(time.time_ns() // 1000)
        self._deadlines: list[tuple[float, int]] = []
        self.answered_by: dict[tuple[str, str], str] = {}
        """The instance that answered each recent ``any`` message before a restart (the
        journal's)."""
        self.claims: Claims | None = None
        """After a standby takeover, what the members say they hold
        (:mod:`robotlab.broker.claims`)."""

    # -- entry points ---------------------------------------------------------------------

    def route(self, header: dict[str, Any], body: Body, notify: str | None,
              key: tuple[str, str] | None = None, receipt_id: str | None = None,
              header_bytes: int = 0) -> None:
        """Route one SEND (already stamped with ``from``/``from_instance``) to its targets.

        ``key`` defaults to (``notify``, id) and ``receipt_id`` to the message id; a replay
        passes its own of both (see :class:`Record`). ``header_bytes``: the header's size as it
        came, which the journal's bound counts (a sender may fill a header, up to 64 KiB).
        """
        key = key or (notify or "", header["id"])
        if key in self.active:
            return  # a resend after reconnect; the original is still in flight
        if key in self.recent:
            self._send_receipt(notify, self.recent[key])
            return
        self.counters["routed"] += 1
        # tracing off: one check
        span = spans.routing(header) if tracing.ENABLED and "traceparent" in header else None
        targets, receipt_id = self.registry.targets(header), receipt_id or header["id"]
        if header.get("untracked"):  # a reply (replies.py)
            self.replies.route(header, body, notify, key, receipt_id, targets, span, header_bytes)
            return
        record = Record(header, body, notify, key, receipt_id, span=span, header_bytes=header_bytes)
        # answered before a restart: back to the one with its reply
        if self.answered_by and key in self.answered_by:
            record.owner = self.answered_by.pop(key)
        if self.claims is not None and header.get("any") and not self.claims.decide(record):
            targets = []  # a member not back yet may have it: held until it is, or says it has not
        elif record.owner is not None:
            owner = self.registry.by_instance.get(record.owner)
            targets = [owner] if owner is not None else []
        if not self.journal.room_for(len(body) + header_bytes + ROW_BYTES):
            self.counters["journal_full"] += 1
            self.settle(record, "", Status.BUSY, f"{self.journal.full}; try again later")
            return
        self._hand_out(record, targets)

    def _hand_out(self, record: Record, targets: list[Peer]) -> None:
        """Keep and dispatch a new record, or hold it while its name's members are away."""
        if not targets or record.owner is not None or record.header.get("any"):
            # journaled before it goes anywhere: a hold keeps it for later, and an `any`
            # message's hand-out notes its owner beside it in the file
            self.keep(record)
            if not targets:
                self.start(record, targets, monotonic())
            else:
                self._dispatch_all(record, targets)  # start's last step, without its checks
            return
        # The common case: its DELIVERs leave first, then the journal has it (nothing is
        # committed before this turn ends); not at all if every copy was refused on the way.
        self.active[record.key] = record
        self._dispatch_all(record, targets)
        if record.pending > 0:
            self.keep(record)

    def keep(self, record: Record) -> None:
        """Make ``record`` active and journal it until it settles."""
        self.active[record.key] = record
        self.journal.put(record.key, record.header, record.body, record.notify, record.receipt_id,
                         record.header_bytes)
        record.kept = True
        if record.owner is not None:
            # a resend of a message answered before a restart, for the instance that answered
            # it: held for it, or handed to it, and so noted in the file (that instance, a member
            # the file holds, would claim it at a next restart too)
            self.journal.owned(record.key, record.owner)

    def start(self, record: Record, targets: list[Peer], now: float,
              until: float | None = None) -> None:
        """Dispatch a record to ``targets``, or hold it while its name's members are away."""
        if not targets:
            until = until if until is not None else self.holds.until(record.header, now)
            if until is None or until <= now:
                record.pending = 1
                self.settle(record, "", Status.UNDELIVERABLE, record.nobody(),
                            maybe_ran=record.may_have_run())
                return
            if not record.held:
                self.counters["held"] += 1
            record.held = True
            self.holds.hold(record.header["to"], record.key, record, until)
            return
        if record.header.get("untracked"):
            self.replies.release(record, targets, until)
            return
        self._dispatch_all(record, targets)

    def _dispatch_all(self, record: Record, targets: list[Peer]) -> None:
        """Hand a tracked record's first copies to ``targets``; it settles once each copy has."""
        record.pending = len(targets)
        for peer in targets:
            self.dispatch(record, peer, 1, {peer.instance})

    def ack(self, peer: Peer, delivery_id: int, reply: dict[str, Any] | None = None) -> None:
        """Settle a delivery as acked by ``peer``; ``reply`` is the header of a reply carrying the
        ack."""
        delivery = self.inflight.get(delivery_id)  # _take, inline: every request's reply comes here
        if delivery is None or delivery.instance != peer.instance:
            return
        del self.inflight[delivery_id]
        peer.inflight.discard(delivery_id)
        peer.delivered += 1
        self.counters["delivered"] += 1
        record = delivery.record
        if (reply and reply.get("reply_to") == record.header["id"]
                and reply.get("to_instance") == record.notify):
            record.replied = True  # the reply reaches whoever waits for the receipt: it says it all
        self.settle(delivery.record, delivery.instance, Status.DELIVERED, "")
        # idle, while work waits for members away
        if not peer.inflight and self.holds.holding(peer.name):
            release(self, peer.name, monotonic())

    def written_for(self, peer: Peer, delivery_id: int) -> bool:
        """True when ``peer``'s delivery ``delivery_id`` is of a message the journal's file
        holds: its reply must not leave before the commit that settles it."""
        delivery = self.inflight.get(delivery_id)
        return (delivery is not None and delivery.instance == peer.instance
                and self.journal.written(delivery.record.key))

    def nack(self, peer: Peer, delivery_id: int, reason: str) -> None:
        """Settle a delivery as refused by ``peer``; idempotent messages are retried first."""
        delivery = self._take(peer, delivery_id)
        if delivery is None:
            return
        peer.nacked += 1
        self.counters["nacked"] += 1
        self._fail(delivery, Status.NACKED, reason or "nacked without a reason")

    def touch(self, peer: Peer, delivery_ids: list[Any], now: float, wall_now: float) -> None:
        """Extend the ack deadline of deliveries ``peer`` still holds, up to each message's
        deadline."""
        # ids are checked one by one (not typed list[int]): the compiled broker enforces annotations
        for delivery_id in delivery_ids:
            delivery = self.inflight.get(delivery_id) if isinstance(delivery_id, int) else None
            if delivery is None or delivery.instance != peer.instance:
                continue
            extended = min(now + self.ack_timeout, delivery.limit)
            deadline = delivery.record.header.get("deadline")
            if isinstance(deadline, (int, float)):
                extended = min(extended, now + max(deadline - wall_now, 0.0))
            if extended > delivery.deadline:
                delivery.deadline = extended
                self.push_deadline(extended, delivery_id)

    def effects_done(self, peer: Peer, delivery_id: int, keys: list[Any]) -> None:
        """Keep the keys of side-effect calls completed on a delivery ``peer`` holds, journaled
        now: a later attempt of the message is told them."""
        delivery = self.inflight.get(delivery_id)
        if delivery is not None and delivery.instance == peer.instance:
            record = delivery.record
            if record.note_effects(keys) and record.effects is not None:
                self.journal.effects(record.key, record.effects)

    def expire(self, now: float) -> None:
        """Time out deliveries whose ack deadline has passed."""
        while self._deadlines and self._deadlines[0][0] <= now:
            due, delivery_id = heappop(self._deadlines)
            delivery = self.inflight.get(delivery_id)
            if delivery is None or delivery.deadline > due:
                continue  # settled, or touched since: a later heap entry stands for it
            if delivery.instance in self.holds.away:
                # its member may come back: resume() sets a new deadline, or lost() fails it
                continue
            del self.inflight[delivery_id]
            peer = self.registry.by_instance.get(delivery.instance)
            if peer is not None:
                peer.inflight.discard(delivery_id)
            self.counters["timeouts"] += 1
            self._fail(delivery, Status.TIMEOUT, delivery.late(now, self.ack_timeout))

    def lost(self, peer: Peer, why: str) -> None:
        """Fail every delivery in flight to a peer that went away."""
        for delivery_id in sorted(peer.inflight):
            delivery = self.inflight.pop(delivery_id, None)
            if delivery is not None:
                self.counters["timeouts"] += 1
                self._fail(delivery, Status.TIMEOUT,
                           f"{peer.name} ({peer.instance}) {why} with the message in flight")
        peer.inflight.clear()

    def push_deadline(self, due: float, delivery_id: int) -> None:
        heappush(self._deadlines, (due, delivery_id))
        if len(self._deadlines) > 2 * len(self.inflight) + DEADLINE_SLACK:
            # A settled delivery's entry stays until it comes due, an ack timeout later: at
            # thousands of messages a second that is megabytes (22 MB at 5k/s and 30 s). Rebuilt
            # from what is in flight, each at its current deadline (amortised O(1) a push).
            self._deadlines = [(each.deadline, key) for key, each in self.inflight.items()]
            heapq.heapify(self._deadlines)

    def next_deadline(self) -> float | None:
        """The earliest pending ack deadline, for the poll timeout."""
        return self._deadlines[0][0] if self._deadlines else None

    # -- internals --------------------------------------------------------------------------

    def dispatch(self, record: Record, peer: Peer, attempt: int, tried: set[str]) -> None:
        # Every tracked message comes here: Peer.has_room, the handling time and the DELIVER
        # header are inline.
        if len(peer.inflight) >= peer.max_inflight:
            self.settle(record, peer.instance, Status.BUSY,
                        f"{peer.name} ({peer.instance}) has {len(peer.inflight)} deliveries in "
                        "flight")
            return
        now, delivery_id = monotonic(), next(self._ids)
        asked, most = record.header.get("max_handling"), self.max_handling
        limit = now + (min(asked, most) if isinstance(asked, (int, float)) else most)
        deadline = min(now + self.ack_timeout, limit)
        delivery = InFlightCopy(delivery_id, record, peer.instance, deadline, attempt, tried,
                                started=now, limit=limit)
        self.inflight[delivery_id] = delivery
        peer.inflight.add(delivery_id)
        self.push_deadline(deadline, delivery_id)
        # A kept `any` message goes through the outbox: the first one a member is handed waits
        # for the commit that writes the member, whom a restart asks what it holds.
        owned = record.kept and record.header.get("any")
        send = self.transmit if owned else self.deliver
        header = deliver_header(record.header, delivery_id, attempt, record.effects)
        if not send(peer, Command.DELIVER, header, record.body):
            self.inflight.pop(delivery_id, None)
            peer.inflight.discard(delivery_id)
            # Its connection is gone (the broker forgets it this turn). Nothing was handed out,
            # so an `any` message goes to another live instance of the name, if there is one.
            other = (self.registry.pick_any(peer.name, exclude=tried)
                     if record.header.get("any") else None)
            if other is not None and other.instance not in tried:
                self.dispatch(record, other, attempt, tried | {other.instance})
                return
            self._fail(delivery, Status.UNDELIVERABLE,
                       f"{peer.name} ({peer.instance}) cannot be reached")
            return
        if record.handed_to is None:
            record.handed_to = {peer.instance}
        else:
            record.handed_to.add(peer.instance)
        if owned:
            # noted even when the owner was known already (a claim at a takeover, an answer
            # before a restart): the file may not have it yet
            record.owner = peer.instance
            self.journal.owned(record.key, peer.instance)

    def _take(self, peer: Peer, delivery_id: int) -> InFlightCopy | None:
        delivery = self.inflight.get(delivery_id)
        if delivery is None or delivery.instance != peer.instance:
            return None  # late or foreign ack: the delivery already settled elsewhere
        del self.inflight[delivery_id]
        peer.inflight.discard(delivery_id)
        return delivery

    def _fail(self, delivery: InFlightCopy, status: str, detail: str) -> None:
        record = delivery.record
        if record.header.get("idempotent") and delivery.attempt < MAX_ATTEMPTS:
            peer = self.registry.retry_target(record.header, delivery.tried)
            if peer is not None:
                self.dispatch(record, peer, delivery.attempt + 1, delivery.tried | {peer.instance})
                return
        self.settle(record, delivery.instance, status, detail,
                    maybe_ran=record.may_have_run(delivery.tried))

    def settle(self, record: Record, instance: str, status: str, detail: str,
               maybe_ran: bool = False) -> None:
        """One copy's fate; a failed copy becomes a dead letter that says whether its work may
        have run (the copy, or an earlier try of it, was handed to a member)."""
        record.outcomes.append((instance, status, detail))
        if status in Status.FAILURES and status != Status.BUSY:
            letter = self.dlq.add(status, detail, record.header, record.body, maybe_ran)
            record.dlq_ids.append(letter.dlq_id)
            self.counters["dead_lettered"] += 1
        record.pending -= 1
        if record.pending <= 0:
            self._complete(record)

    def _complete(self, record: Record) -> None:
        # Most records end acked by the reply that answers them, and their receipt is never
        # sent: it is built (receipt()) only when it is, or when a resend asks for it again.
        self.active.pop(record.key, None)
        if record.kept:
            self.journal.settle(record.key)
            # a handed-out `any` message: a resend goes back to its owner
            if record.owner is not None:
                self.journal.answered(record.key, record.owner)
            record.kept = False
        status = settled_status(record.outcomes)
        if status not in (Status.DELIVERED, Status.BUSY):
            busy = self.dlq.add_busy_copies(record.outcomes, record.header, record.body)
            record.dlq_ids += busy
            self.counters["dead_lettered"] += len(busy)
        outcome = (record.receipt_id, record.header["to"], record.outcomes,
                   record.dlq_ids[0] if record.dlq_ids else None)
        if record.span is not None:
            spans.settled(record.span, receipt(outcome))
        if status != Status.BUSY:  # busy invites a resend of the same message: route it afresh
            self.recent[record.key] = outcome
            if len(self.recent) > RECENT_RECEIPTS:
                self.recent.popitem(last=False)
        if status == Status.DELIVERED and (record.replied
                                           or not record.header.get("receipt", True)):
            return  # the reply already told the sender; or the sender asked only for failures
        self._send_receipt(record.notify, outcome)

    def _send_receipt(self, notify: str | None, outcome: Outcome) -> None:
        peer = self.registry.by_instance.get(notify) if notify else None
        if peer is not None:
            self.transmit(peer, Command.RECEIPT, receipt(outcome), b"")

