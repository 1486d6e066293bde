"""What a pool's promise rests on across a broker killed at any moment: an ``any`` message leaves
the broker only once its journal holds the member it goes to, so a restart knows every instance
that may have it, and asks them (their claims) before it hands a resend to anyone; and a reply
held for a requester who is away is journaled, since the member that sent it has forgotten it."""

from __future__ import annotations

from pathlib import Path

from robotlab.broker.claims import Claims
from robotlab.broker.deliveries import Deliveries
from robotlab.broker.dlq import DeadLetterQueue
from robotlab.broker.holds import Holds
from robotlab.broker.journal import Journal
from robotlab.broker.outbox import Outbox
from robotlab.broker.registry import Peer, Registry
from robotlab.broker.releases import expire_holds, release
from robotlab.broker.restart import restore, take_back
from robotlab.bus.wire.protocol import Command, pack


def peer(name: str, instance: str) -> Peer:
    return Peer(identity=instance.encode(), name=name, instance=instance, role="robot",
                max_inflight=8, expires=1e9, joined=0.0)


def on_disk(journal: Journal) -> list[tuple[str, str | None]]:
    """(id, owner) of the messages in the file: what survives a kill -9. Read on the journal's
    own connection (the file is locked to it); changes not committed are not in the file."""
    return list(journal._db.execute("SELECT id, owner FROM messages ORDER BY rowid"))


def members_on_disk(journal: Journal) -> dict[str, str]:
    return dict(journal._db.execute("SELECT instance, name FROM members"))


def test_a_members_first_handout_waits_for_the_commit_that_writes_the_member(
        tmp_path: Path) -> None:
    registry, sent = Registry(), []
    for member in (peer("bob", "bob-1"), peer("alice", "alice-1")):
        registry.add(member)
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    # The broker's socket seam: record what leaves instead of sending it
    outbox = Outbox(journal, registry, lambda to, command, header,
                    body: sent.append((to.instance, command, body)) or True)
    deliveries = Deliveries(registry, DeadLetterQueue(100), outbox.transmit_settled, 30.0,
                            journal=journal, deliver=lambda to, command, header,
                            body: sent.append((to.instance, command, body)) or True)

    def send(message_id: str, body: bytes, **options: object) -> None:
        deliveries.route({"id": message_id, "to": "bob", "from": "alice",
                          "from_instance": "alice-1", **options}, body, notify="alice-1")

    try:
        # When alice sends one `any` message and one addressed to bob-1 in a turn
        send("m1", b"refund 7", any=True)
        send("m2", b"note")
        # Then the addressed one left at once, and the `any` one waits: bob-1 is in no file yet
        assert sent == [("bob-1", Command.DELIVER, b"note")]
        assert members_on_disk(journal) == {}
        # When the turn ends: the commit writes bob-1 as a member, then the message leaves
        outbox.end_turn(0.0)
        assert members_on_disk(journal) == {"bob-1": "bob"}
        assert sent[1:] == [("bob-1", Command.DELIVER, b"refund 7")]
        # And the next `any` message to bob-1 leaves at once, written nowhere: a restart asks
        # bob-1 what it holds
        send("m3", b"refund 8", any=True)
        assert sent[2:] == [("bob-1", Command.DELIVER, b"refund 8")]
        outbox.end_turn(0.0)
        assert on_disk(journal) == []
    finally:
        journal.close()
    # When a broker starts on that file
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        holds = Holds(30.0)
        table = Deliveries(Registry(), DeadLetterQueue(100), lambda *_: True, 30.0,
                           journal=journal, holds=holds)
        restore(journal.restore(), DeadLetterQueue(100), holds, table, journal.path)
        # Then bob's `any` messages wait for bob-1, which may have one of them
        assert table.claims is not None and table.claims.open("bob")
        assert table.claims.waiting == {"bob": {"bob-1"}}
    finally:
        journal.close()


def test_a_member_that_said_bye_or_stayed_away_leaves_the_file(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        for instance in ("w-1", "w-2", "w-3"):
            assert not journal.member(instance, "w")  # not in the file: written next commit
        assert journal.commit() and journal.member("w-1", "w")
        assert members_on_disk(journal) == {"w-1": "w", "w-2": "w", "w-3": "w"}
        journal.member_left("w-2")
        journal.member_left("w-9")  # never in the file: nothing to write
        assert journal.commit(everything=True)
        assert members_on_disk(journal) == {"w-1": "w", "w-3": "w"}
    finally:
        journal.close()


def test_a_reply_held_for_a_requester_away_survives_a_restart(tmp_path: Path) -> None:
    sent: list = []
    reply = {"id": "r1", "to": "alice", "to_instance": "alice-1", "untracked": True,
             "reply_to": "m1", "from": "bob", "from_instance": "bob-1"}

    def table(journal: Journal, *members: Peer) -> Deliveries:
        registry, holds = Registry(), Holds(30.0)
        holds.know("alice")
        for member in members:
            registry.add(member)

        def transmit(to: Peer, command: Command, header: dict, body: object) -> bool:
            sent.append((to.instance, command, body))
            return True

        return Deliveries(registry, DeadLetterQueue(100), transmit, 30.0, journal=journal,
                          holds=holds)

    # Given bob's reply to alice, who is away: held, and written with the turn's commit
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    table(journal, peer("bob", "bob-1")).route(reply, b"42", notify="bob-1")
    assert journal.commit(everything=True) and on_disk(journal) == [("r1", None)]
    journal.close()  # the broker is gone; bob has long forgotten his reply
    # When a broker starts on the journal and alice comes back
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        alice = peer("alice", "alice-1")
        deliveries = table(journal, alice)
        for header, body, notify, key, receipt_id, owner, effects in journal.restore().messages:
            take_back(deliveries, header, body, notify, key, receipt_id, 0.0, owner, effects)
        release(deliveries, "alice", 0.0)
        # Then she gets the reply, and the journal lets it go
        assert sent == [("alice-1", Command.DELIVER, b"42")]
        assert journal.commit() and on_disk(journal) == []
    finally:
        journal.close()


def test_a_resend_of_an_answered_request_goes_back_to_the_instance_that_answered(
        tmp_path: Path) -> None:
    sent: list = []
    request = {"id": "m1", "to": "w", "any": True, "from": "alice", "from_instance": "alice-1"}
    members = [peer("w", "w-1"), peer("w", "w-2"), peer("alice", "alice-1")]

    def table(journal: Journal) -> Deliveries:
        registry = Registry()
        for member in members:
            registry.add(member)

        def transmit(to: Peer, command: Command, header: dict, body: object) -> bool:
            sent.append((to.instance, command, header))
            return True

        return Deliveries(registry, DeadLetterQueue(100), transmit, 30.0, journal=journal,
                          deliver=transmit)

    # Given a request w-1 answered and acked; the reply then lost with the broker
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    first = table(journal)
    first.route(request, b"refund 7", notify="alice-1")
    ((delivery_id, delivery),) = first.inflight.items()
    first.ack(first.registry.by_instance[delivery.instance], delivery_id)
    assert journal.commit(everything=True) and on_disk(journal) == []
    answered_by = delivery.instance
    journal.close()
    # When alice, with no reply, sends it again to a broker started on the journal
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        second = table(journal)
        second.answered_by = journal.restore().answered
        # busier: `any` alone would pick the other
        second.registry.by_instance[answered_by].inflight.add(-1)
        sent.clear()
        second.route(request, b"refund 7", notify="alice-1")
        # Then it goes to the instance that answered it (which answers again from its cache),
        # though the other is less loaded
        (to, command, header), = [each for each in sent if each[1] == Command.DELIVER]
        assert to == answered_by
    finally:
        journal.close()


def test_a_resend_held_for_the_instance_that_answered_is_journaled_with_it(
        tmp_path: Path) -> None:
    request = {"id": "m1", "to": "w", "any": True, "from": "alice", "from_instance": "alice-1"}

    def table(journal: Journal, *members: Peer) -> Deliveries:
        registry, holds = Registry(), Holds(30.0)
        holds.know("w")
        for member in members:
            registry.add(member)
        return Deliveries(registry, DeadLetterQueue(100), lambda *_: True, 30.0, journal=journal,
                          holds=holds)

    # Given a request w-1 answered, its reply then lost with the broker
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    first = table(journal, peer("w", "w-1"), peer("alice", "alice-1"))
    first.route(request, b"refund 7", notify="alice-1")
    ((delivery_id, delivery),) = first.inflight.items()
    first.ack(first.registry.by_instance["w-1"], delivery_id)
    assert journal.commit(everything=True) and on_disk(journal) == []
    journal.close()
    # When alice sends it again to a broker started on the journal, before w-1 is back: it is
    # held for w-1, and that commit is the last before this broker is killed too
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    second = table(journal, peer("w", "w-2"), peer("alice", "alice-1"))
    second.answered_by = journal.restore().answered
    second.route(request, b"refund 7", notify="alice-1")
    assert journal.commit(everything=True)
    # Then the file holds it with w-1, so the next broker holds it for w-1 too, not for w-2,
    # which never saw it and would run it again
    assert on_disk(journal) == [("m1", "w-1")]
    journal.close()


def test_a_message_handed_to_the_instance_that_claims_it_is_journaled_with_it(
        tmp_path: Path) -> None:
    # Given a passive broker's journal holding an `any` message with no owner yet (the stream
    # had the message, not yet whom it went to), taken back at a takeover that expects w-1
    journal, holds = Journal(str(tmp_path / "broker.db"), 1 << 20), Holds(30.0)
    holds.know("w")
    table = Deliveries(Registry(), DeadLetterQueue(100), lambda *_: True, 30.0, journal=journal,
                       holds=holds)
    table.route({"id": "m1", "to": "w", "any": True, "from": "alice", "from_instance": "alice-1"},
                b"refund 7", notify="alice-1")
    assert journal.commit(everything=True) and on_disk(journal) == [("m1", None)]
    journal.close()
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        w1 = peer("w", "w-1")
        table = Deliveries(Registry(), DeadLetterQueue(100), lambda *_: True, 30.0,
                           journal=journal, holds=Holds(30.0))
        table.claims = Claims.of({"w-1": "w"}, 30.0, 0.0)
        for header, body, notify, key, receipt_id, owner, effects in journal.restore().messages:
            take_back(table, header, body, notify, key, receipt_id, 0.0, owner, effects)
        # When w-1 comes back saying it has the message, and is handed it again
        table.registry.add(w1)
        assert table.claims is not None
        table.claims.joined("w", "w-1", pack([["alice-1", "m1"]]))
        release(table, "w", 0.0)
        assert [each.instance for each in table.inflight.values()] == ["w-1"]
        # Then the file says w-1 has it: a restart of this broker holds it for w-1 alone
        assert journal.commit() and on_disk(journal) == [("m1", "w-1")]
    finally:
        journal.close()


def test_a_member_not_back_within_a_restarts_hold_leaves_the_file_and_its_name_goes_on(
        tmp_path: Path) -> None:
    # Given a file holding two members of w, and a broker started on it: w-2 comes back, w-1
    # (killed with the old broker) never does
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    for instance in ("w-1", "w-2"):
        journal.member(instance, "w")
    assert journal.commit()
    journal.close()
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    sent: list = []
    try:
        holds = Holds(30.0)
        table = Deliveries(Registry(), DeadLetterQueue(100),
                           lambda to, command, header, body: sent.append(to.instance) or True,
                           30.0, journal=journal, holds=holds)
        restore(journal.restore(), DeadLetterQueue(100), holds, table, journal.path)
        assert table.claims is not None
        table.registry.add(peer("w", "w-2"))
        table.claims.joined("w", "w-2", b"")
        # When an `any` message for w is sent again: w-1 may have had it, so it waits
        resend = {"id": "m1", "to": "w", "any": True, "from": "alice", "from_instance": "alice-1"}
        table.route({**resend, "again": True}, b"job", notify="alice-1")
        assert sent == []
        # (one sent for the first time goes at once: no broker had it before)
        table.route({**resend, "id": "m2"}, b"new job", notify="alice-1")
        assert sent == ["w-2"]
        # Then when the hold since the start runs out, it goes to w-2, and w-1 leaves the file:
        # the next restart waits for nobody
        expire_holds(table, table.claims.until)
        assert sent == ["w-2", "w-2"] and table.claims is None
        assert journal.commit() and members_on_disk(journal) == {"w-2": "w"}
    finally:
        journal.close()
