"""What the broker tells senders waits for the journal: receipts and admin replies go out after the
commit.

A turn's receipts and admin replies are held here until the journal has committed the turn
(see :mod:`robotlab.broker.journal`), so nothing a sender is told can be lost with the broker.
One of a standby pair holds receipts and replies further, until its peer holds the commit too
(:meth:`robotlab.broker.replica.Replica.holds`), so nothing is lost with the broker's host. The
DELIVER of an ``any`` message waits only the first time its member is handed one, for the
record of that member in the file (and on the peer): after a restart or a takeover the members
the file holds say what they have (:mod:`robotlab.broker.journal_members`), so the owner of
each message need not be written before it is handed out.
:func:`receipt` says what a RECEIPT carries, from the compact outcome a settled record leaves.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from time import monotonic
from typing import Any

from robotlab.bus.wire.protocol import Body, Command, Status

from .journal import NoJournal
from .registry import Peer, Registry
from .replica import Replica

Transmit = Callable[[Peer, Command, dict[str, Any], Body], bool]
Outcome = tuple[str, str, list[tuple[str, str, str]], str | None]
"""What a receipt says, kept compact until one is sent: (receipt id, to, outcomes, dlq id)."""


class Outbox:
    """The turn's receipts and admin replies, held until the journal's commit."""

    def __init__(self, journal: NoJournal, registry: Registry, transmit: Transmit) -> None:
        self.journal = journal
        self.registry = registry
        self.transmit = transmit
        self._held: list[tuple[Peer, Command, dict[str, Any], Body]] = []
        self._after: list[Callable[[], None]] = []
        """What runs once the turn is committed (the replies to messages the file held)."""
        self.replica: Replica | None = None
        self._waiting: deque[tuple[int, list[tuple[Peer, Command, dict[str, Any], Body]]]] = deque()
        """Committed turns' receipts and replies, each with the commit the standby peer must hold
        first."""
        self._handouts: deque[tuple[int, tuple[Peer, Command, dict[str, Any], Body]]] = deque()
        """Committed DELIVERs, each with the commit that streamed its member."""

    def add(self, peer: Peer, command: Command, header: dict[str, Any], body: Body = b"") -> None:
        """Send ``header`` (and ``body``) to ``peer`` once the turn is committed."""
        self._held.append((peer, command, header, body))

    def after_commit(self, action: Callable[[], None]) -> None:
        """Run ``action`` once this turn is committed (its changes in the local file)."""
        self._after.append(action)

    def transmit_settled(self, peer: Peer, command: Command, header: dict[str, Any],
                         body: Body) -> bool:
        """The deliveries' way out: receipts wait for the commit, and so does the DELIVER of an
        ``any`` message to a member not in the file yet (:meth:`hands_out_now`); the rest goes
        now."""
        if command == Command.RECEIPT or (command == Command.DELIVER
                                          and not self.hands_out_now(peer, header)):
            self.add(peer, command, header, body)
            return True
        return self.transmit(peer, command, header, body)

    def hands_out_now(self, peer: Peer, header: dict[str, Any]) -> bool:
        """May an ``any`` message go to ``peer`` now? Once the file holds it as a member, and the
        standby peer (if any) it and the sender, with no earlier hand-out still waiting."""
        if not self.journal.member(peer.instance, peer.name):
            return False
        replica = self.replica
        if replica is None:
            return True
        seq = replica.member(peer.instance, peer.name, header.get("from", ""))
        return not self._handouts and replica.holds(seq, monotonic())

    def end_turn(self, now: float) -> None:
        """Commit the journal if something waits on it (or its changes are due at ``now``, the
        loop's clock), then send (one of a standby pair: once its peer holds the commit).

        Changes nobody waits on may wait for a later turn; a failed commit keeps everything for
        the next one: what the senders would be told is not safe yet.
        """
        if self._held or self._after or self.journal.due(now):
            if not self.journal.commit():
                return
            after, self._after = self._after, []
            for action in after:
                action()
            # what those added (a receipt, a dead letter) waits for a commit of its own
            if after and self._held and not self.journal.commit():
                return
            held, self._held = self._held, []
            if self.replica is None:
                self._send(held)
                return
            if held:
                self._queue(held, self.replica)
        waiting, handouts, replica = self._waiting, self._handouts, self.replica
        while waiting and replica is not None and replica.holds(waiting[0][0], now):
            self._send(waiting.popleft()[1])
        while handouts and replica is not None and replica.holds(handouts[0][0], now):
            self._send([handouts.popleft()[1]])

    def _queue(self, held: list[tuple[Peer, Command, dict[str, Any], Body]],
               replica: Replica) -> None:
        """Queue a committed turn's sends for the peer: receipts and replies wait for this
        turn's commit, DELIVERs for the record of their member and requester (streamed the first
        time)."""
        told = [each for each in held if each[1] != Command.DELIVER]
        if told:
            self._waiting.append((replica.barrier(), told))
        for each in held:
            if each[1] == Command.DELIVER:
                peer, header = each[0], each[2]
                seq = replica.member(peer.instance, peer.name, header.get("from", ""))
                self._handouts.append((seq, each))

    def _send(self, held: list[tuple[Peer, Command, dict[str, Any], Body]]) -> None:
        for peer, command, header, body in held:
            current = self.registry.by_instance.get(peer.instance)
            if current is None and command == Command.DELIVER:
                # its member left this turn: the delivery was failed, or is resent when it is back
                continue
            self.transmit(current or peer, command, header, body)


def settled_status(outcomes: list[tuple[str, str, str]]) -> str:
    """A message's status from its copies' outcomes: delivered when every copy was; else the
    first failure that is not ``busy``; ``busy`` (send it again) only when every failed copy
    was refused for room. A copy that timed out or was refused is never hidden behind a busy
    one: a resend would reach only the copies still there, and the sender would hear
    ``delivered`` for a message one of whose copies was lost."""
    status = Status.DELIVERED
    for _, each, _ in outcomes:
        if each == Status.DELIVERED:
            continue
        if each != Status.BUSY:
            return each
        status = Status.BUSY
    return status


def receipt(outcome: Outcome) -> dict[str, Any]:
    """The RECEIPT header of an outcome: its status (:func:`settled_status`), every instance
    that had a copy, and, when copies failed, each of them (``failed``: instance, status,
    detail) with their details joined in ``detail``."""
    receipt_id, to, outcomes, dlq_id = outcome
    failures = [list(o) for o in outcomes if o[1] != Status.DELIVERED]
    header: dict[str, Any] = {"id": receipt_id, "to": to, "status": settled_status(outcomes),
                              "instances": [o[0] for o in outcomes if o[0]]}
    if failures:
        header["failed"] = failures
        header["detail"] = "; ".join(detail for _, _, detail in failures if detail)
    if dlq_id is not None:
        header["dlq_id"] = dlq_id
    return header
