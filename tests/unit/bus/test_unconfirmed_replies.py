"""Kept replies: what a member finishes while the broker is away reaches its sender once it is back.

The broker is the real one, embedded over inproc://, stopped and started again at the same
address; tests/process/test_netns.py cuts a real network link instead.
"""

from __future__ import annotations

import uuid
from pathlib import Path

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
