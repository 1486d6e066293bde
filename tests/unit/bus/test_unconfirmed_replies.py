"""Kept replies: what a member finishes while the broker is away reaches its sender once it is back.

The broker is the real one, embedded over inproc://, stopped and started again at the same
address; tests/process/test_netns.py cuts a real network link instead.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from robotlab import bus
from robotlab.bus import BrokerConfig, EmbeddedBroker
from robotlab.bus.member.dialer import BACKOFF_MAX
from robotlab.bus.member.unconfirmed_replies import Kept
from tests.waiting import wait_until


def test_a_reply_finished_while_the_broker_is_away_arrives_after_it_is_back(tmp_path: Path) -> None:
    url = f"inproc://kept-{uuid.uuid4().hex[:8]}"
    config = BrokerConfig(heartbeat=0.1, hold=30.0, journal=str(tmp_path / "broker.db"))
    first = EmbeddedBroker(url, config).start()
    taken: list = []
    bob = bus.BusClient(url, name="bob", role="robot")
    bob.on_message(lambda delivery, message: (delivery.ack(), taken.append(message)),
                   manual=True).start()
    alice = bus.connect(url, name="alice")
    second = None
    try:
        # Given a request bob acked at once (so alice will not resend it) and answers later
        tracker = alice.send_request("bob", "later")
        wait_until(lambda: taken and tracker.status == "delivered",
                   message="acked, not answered yet")
        # When bob answers while the broker is down, and a broker comes back
        first.stop()
        wait_until(lambda: not bob.connected, message="bob notices the broker is gone")
        before = len(bob._link.kept)  # its ack, perhaps: not confirmed before the broker went
        bob.reply(taken[0], "done while you were away")
        assert len(bob._link.kept) == before + 1
        second = EmbeddedBroker(url, config).start()
        # Then the kept reply reaches alice, once, and bob forgets it when the broker confirms it
        # (alice comes back at her own reconnect backoff, which grew while the broker was gone:
        # on a loaded machine, past 10 s)
        assert tracker.reply(BACKOFF_MAX * 1.25 + 10).content == "done while you were away"
        wait_until(lambda: len(bob._link.kept) == 0, message="the broker confirmed the reply")
    finally:
        alice.close()
        bob.close()
        for broker in (first, second):
            if broker is not None:
                broker.stop()


def test_a_count_from_a_new_connection_never_confirms_a_frame_sent_on_an_old_one() -> None:
    kept = Kept()
    kept.keep(3, [b"ack 1"])  # frame 3 of the first connection
    kept.keep(None, [b"reply"])  # not sent: the broker was away
    kept.unsend()  # a fresh connection: its count starts again
    kept.confirm(10)
    assert kept.take() == [[b"ack 1"], [b"reply"]]


def test_confirm_forgets_exactly_what_the_broker_has_seen() -> None:
    kept = Kept()
    for seq in (2, 5, 9):
        kept.keep(seq, [str(seq).encode()])
    kept.confirm(5)
    assert kept.take() == [[b"9"]]


def test_kept_bytes_are_bounded_and_the_newest_frame_stays_whatever_its_size() -> None:
    kept = Kept(limit=100, max_bytes=10)
    kept.keep(1, [b"ab", b"cdef"])  # 6 bytes
    kept.keep(2, [b"ghij"])  # 10 in all: within the bound
    assert (len(kept), kept.bytes, kept.dropped) == (2, 10, 0)
    kept.keep(3, [b"k"])  # 11: the oldest goes
    assert kept.take() == [[b"ghij"], [b"k"]]
    kept.keep(None, [b"x" * 50])  # alone past the bound: kept, it is the newest
    assert (len(kept), kept.bytes, kept.dropped) == (1, 50, 1)


class KeptAgainstAModel(RuleBasedStateMachine):
    """Kept against a list of (seq, frames) in keeping order, bounded as documented."""

    def __init__(self) -> None:
        super().__init__()
        self.kept = Kept(limit=4, max_bytes=40)
        self.model: list[tuple[int, list[bytes]]] = []
        self.unsent = 0
        self.dropped = 0

    @rule(sent=st.booleans(), sizes=st.lists(st.integers(0, 30), min_size=1, max_size=3))
    def keep(self, sent: bool, sizes: list[int]) -> None:
        frames = [bytes(size) for size in sizes]
        # a sent frame's number on this connection: one past the highest sent so far
        seq = max((s for s, _ in self.model if s > 0), default=0) + 1 if sent else None
        self.kept.keep(seq, list(frames))
        if seq is None:
            self.unsent -= 1
        self.model.append((seq if seq is not None else self.unsent, frames))
        while len(self.model) > 4 or (_bytes(self.model) > 40 and len(self.model) > 1):
            self.model.pop(0)
            self.dropped += 1

    @rule(seen=st.integers(0, 12))
    def confirm(self, seen: int) -> None:
        self.kept.confirm(seen)
        self.model = [(s, f) for s, f in self.model if not 0 < s <= seen]

    @rule()
    def unsend(self) -> None:
        self.kept.unsend()
        renumbered = []
        for _, frames in self.model:
            self.unsent -= 1
            renumbered.append((self.unsent, frames))
        self.model = renumbered

    @rule()
    def take(self) -> None:
        assert self.kept.take() == [f for _, f in self.model]
        self.model = []

    @invariant()
    def same_as_the_model(self) -> None:
        assert len(self.kept) == len(self.model)
        assert self.kept.bytes == _bytes(self.model)
        assert self.kept.dropped == self.dropped
        assert len(self.kept) <= 4
        assert self.kept.bytes <= 40 or len(self.kept) == 1


def _bytes(model: list[tuple[int, list[bytes]]]) -> int:
    return sum(len(frame) for _, frames in model for frame in frames)


TestKeptAgainstAModel = KeptAgainstAModel.TestCase
TestKeptAgainstAModel.settings = settings(max_examples=200, stateful_step_count=30,
                                          deadline=None)
