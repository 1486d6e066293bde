"""The broker driven like trusted brokers are tested: random interleavings against a small model.

A hypothesis ``RuleBasedStateMachine`` runs the real broker (embedded, over inproc, for speed)
and raw peers (tests/hostile.py) through HELLO, SEND, ACK, NACK, TOUCH, BYE, disconnects,
silent expiry, replay, purge and instance hijacks. After every step it checks the invariants;
at teardown, that every message ended in exactly one terminal state its sender was told, and
that the broker holds nothing any more.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from robotlab.broker.deliveries import RECENT_RECEIPTS
from robotlab.broker.dlq import letter_bytes
from robotlab.bus import BrokerConfig, EmbeddedBroker
from robotlab.bus.wire.protocol import Command, ErrorCode, Status
from tests.hostile import Raw
from tests.waiting import wait_until

NAMES = ("r0", "r1")
# liveness 20 (a member is expired after 1 s of silence): on a loaded machine one slow step must
# not expire a member the model holds as speaking.
CONFIG = BrokerConfig(heartbeat=0.05, liveness=20, ack_timeout=0.5, dlq_max=6, max_inflight=4)
TERMINAL = {Status.DELIVERED, Status.UNDELIVERABLE, Status.NACKED, Status.TIMEOUT, Status.BUSY}
DEAD_LETTERED = Status.FAILURES - {Status.BUSY}


@dataclass
class Member:
    """A raw robot connection and what it was handed."""

    raw: Raw
    name: str
    instance: str
    held: list[int] = field(default_factory=list)
    seen: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """(its name, its instance, the DELIVER header) of each delivery, as it was named then."""
    silent: bool = False


class BrokerMachine(RuleBasedStateMachine):
    """One broker, one sender (alice) and up to four robot connections."""

    def __init__(self) -> None:
        super().__init__()
        self.broker = EmbeddedBroker(config=CONFIG).start()
        self.ids = itertools.count(1)
        self.alice = Raw(self.broker.url, self.broker.context)
        assert self.alice.hello("alice", "alice-1").command == Command.WELCOME
        self.members: list[Member] = []
        self.awaited: set[str] = set()  # ids (and replay refs) whose one receipt alice must get
        self.receipts: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        self.refused: set[str] = set()  # refused at send (ERROR with its ref): no receipt follows
        self.replays: dict[str, str] = {}  # REQUEST id -> the ref its receipt will carry
        self.replayed: dict[str, str] = {}  # ref -> the broker-made id of the replayed message
        self.letters: list[str] = []
        # wire id -> instances handed it
        self.seen_by: defaultdict[str, set[str]] = defaultdict(set)
        self.departed: set[str] = set()  # instances that left; the broker may not have noticed yet

    # -- talking -------------------------------------------------------------------------------

    def pump(self) -> None:
        """Heartbeat every speaking peer and read what the broker sent each."""
        self.alice.send(Command.HEARTBEAT, {})
        for frame in self.alice.drain():
            self._to_alice(frame)
        for member in [m for m in self.members if not m.silent]:
            member.raw.send(Command.HEARTBEAT, {})
            for frame in member.raw.drain():
                if frame.command == Command.DELIVER:
                    member.seen.append((member.name, member.instance, frame.header))
                    self.seen_by[frame.header["id"]].add(member.instance)
                    member.held.append(frame.header["delivery"])

    def _to_alice(self, frame: Any) -> None:
        h = frame.header
        if frame.command == Command.RECEIPT:
            self.receipts[h["id"]].append(h)
            if h.get("dlq_id"):
                self.letters.append(h["dlq_id"])
        elif frame.command == Command.REPLY and h["id"] in self.replays:
            ref = self.replays.pop(h["id"])
            if h["ok"]:
                self.awaited.add(ref)
                self.replayed[ref] = h["result"]["id"]
            else:
                self.refused.add(ref)
        elif frame.command == Command.ERROR and h.get("ref"):
            self.refused.add(h["ref"])
            # a slow turn let alice expire: introduce her again
            if h["code"] == ErrorCode.NOT_READY:
                self.alice.send(Command.HELLO, {"name": "alice", "instance": "alice-1"})

    def _member(self, index: int) -> Member:
        return self.members[index % len(self.members)]

    # -- rules ---------------------------------------------------------------------------------

    @precondition(lambda self: len(self.members) < 4)
    @rule(name=st.sampled_from(NAMES))
    def hello(self, name: str) -> None:
        member = Member(Raw(self.broker.url, self.broker.context), name, f"{name}-{next(self.ids)}")
        assert member.raw.hello(name, member.instance).command == Command.WELCOME
        self.members.append(member)

    @rule(to=st.sampled_from((*NAMES, "nobody")), any_=st.booleans(), idempotent=st.booleans())
    def send(self, to: str, any_: bool, idempotent: bool) -> None:
        message_id = f"m{next(self.ids)}"
        self.alice.send(Command.SEND, {"id": message_id, "to": to, "type": "message", "any": any_,
                                       "idempotent": idempotent}, message_id)
        self.awaited.add(message_id)

    # What a peer holds, and which letters exist, depend on the broker's timing: rules that
    # need them do nothing when there is none, since hypothesis needs preconditions it can replay.
    @precondition(lambda self: self.members)
    @rule(index=st.integers(0, 3), nack=st.booleans())
    def settle(self, index: int, nack: bool) -> None:
        holding = [m for m in self.members if m.held and not m.silent]
        if not holding:
            return
        member = holding[index % len(holding)]
        delivery = member.held.pop(0)
        if nack:
            member.raw.send(Command.NACK, {"delivery": delivery, "reason": "model says no"})
        else:
            member.raw.send(Command.ACK, {"deliveries": [delivery]})

    @precondition(lambda self: self.members)
    @rule()
    def touch(self) -> None:
        for member in self.members:
            if member.held and not member.silent:
                member.raw.send(Command.TOUCH, {"deliveries": list(member.held)})

    @precondition(lambda self: self.members)
    @rule(index=st.integers(0, 3), how=st.sampled_from(["bye", "disconnect", "silence"]))
    def leave(self, index: int, how: str) -> None:
        member = self._member(index)
        if how == "silence":  # the socket stays open and says nothing: the broker must expire it
            member.silent = True
            return
        if how == "bye":
            member.raw.send(Command.BYE, {})
        member.raw.close()
        self.members.remove(member)
        self.departed.add(member.instance)

    @precondition(lambda self: self.members)
    @rule(index=st.integers(0, 3), name=st.sampled_from(NAMES))
    def hello_again(self, index: int, name: str) -> None:
        member = self._member(index)
        if member.silent:
            return
        old, member.instance, member.name = member.instance, f"{name}-{next(self.ids)}", name
        member.held.clear()  # whatever the old registration held fails over or is dead-lettered
        assert member.raw.hello(name, member.instance).command == Command.WELCOME
        assert old not in self.broker._broker.registry.by_instance  # replaced, not a ghost

    @precondition(lambda self: self.members)
    @rule(index=st.integers(0, 3))
    def hijack(self, index: int) -> None:
        victim = self._member(index)
        if victim.silent:
            return  # it may have expired already, and then its id is free
        thief = Raw(self.broker.url, self.broker.context)
        try:
            answer = thief.hello(victim.name, victim.instance)
        finally:
            thief.close()
        assert answer.command == Command.ERROR, answer
        assert answer.header["code"] == ErrorCode.CONFLICT, answer

    @rule(index=st.integers(0, 50), purge=st.booleans())
    def dead_letter(self, index: int, purge: bool) -> None:
        if not self.letters:
            return
        dlq_id = self.letters[index % len(self.letters)]
        request_id = f"q{next(self.ids)}"
        if purge:
            self.alice.send(Command.REQUEST, {"id": request_id, "op": "dlq.purge",
                                              "args": {"dlq_id": dlq_id}})
            return
        self.replays[request_id] = f"ref{next(self.ids)}"
        self.alice.send(Command.REQUEST, {"id": request_id, "op": "dlq.replay",
                                          "args": {"dlq_id": dlq_id,
                                                   "ref": self.replays[request_id], "id": "m1"}})

    # -- checks --------------------------------------------------------------------------------

    @invariant()
    def nobody_gets_what_was_not_addressed_to_them(self) -> None:
        self.pump()
        for member in self.members:
            for name, _, header in member.seen:
                assert header["to"] == name, header
                assert (header["from"], header["from_instance"]) == ("alice", "alice-1"), header

    @invariant()
    def every_receipt_is_single_terminal_and_for_something_alice_sent(self) -> None:
        for message_id, receipts in self.receipts.items():
            assert len(receipts) == 1, receipts
            receipt = receipts[0]
            # A replay's receipt may overtake the REPLY that names its ref: the ref is pending then.
            assert message_id in self.awaited | set(self.replays.values()), receipt
            assert message_id not in self.refused, receipt
            assert receipt["status"] in TERMINAL, receipt
            if receipt["status"] in DEAD_LETTERED:
                assert receipt.get("dlq_id"), receipt
            if receipt["status"] == Status.DELIVERED:
                # a replay travels under the broker's id
                wire_id = self.replayed.get(message_id, message_id)
                # each one acked it
                assert set(receipt["instances"]) <= self.seen_by[wire_id], receipt

    @invariant()
    def the_broker_loop_runs(self) -> None:
        assert self.broker._thread.is_alive()

    @invariant()
    def no_ghosts(self) -> None:
        known = {"alice-1"} | {m.instance for m in self.members} | self.departed
        assert set(self.broker._broker.registry.by_instance) <= known

    def teardown(self) -> None:
        try:
            for member in self.members:
                member.raw.send(Command.BYE, {})
                member.raw.close()
            self.members.clear()
            wait_until(lambda: self.pump() or self.awaited - self.refused <= set(self.receipts)
                       and not self.replays,
                       timeout=10, message="every message settled and its sender told")
            for message_id in self.awaited - self.refused:
                assert len(self.receipts[message_id]) == 1, (message_id, self.receipts[message_id])
                # counted by --hypothesis-show-statistics
                event(f"ended {self.receipts[message_id][0]['status']}")
            broker = self.broker._broker
            wait_until(lambda: not broker.deliveries.inflight and not broker.deliveries.active,
                       timeout=5, message="the broker holds no delivery")
            wait_until(lambda: self.pump() or len(broker.registry) == 1, timeout=5,
                       message="alice alone: every robot connection forgotten, silent ones expired")
            assert len(broker.dlq) <= CONFIG.dlq_max
            # what the letters count for, kept right through replays, purges and evictions
            assert broker.dlq.bytes == sum(letter_bytes(letter) for letter in broker.dlq.list())
            assert len(broker.deliveries.recent) <= RECENT_RECEIPTS
            assert broker.counters.get("internal_errors", 0) == 0
        finally:
            self.alice.close()
            self.broker.stop()


TestBrokerMachine = pytest.mark.timeout(180)(BrokerMachine.TestCase)
TestBrokerMachine.settings = settings(max_examples=80, stateful_step_count=40, deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
