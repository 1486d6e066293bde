"""Side-effect calls reported done: kept with the message in the broker's journal, and told to
a later attempt of it (through the real broker code, embedded, over inproc://)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from robotlab import bus
from robotlab.broker.journal import Journal
from robotlab.bus import BrokerConfig, EmbeddedBroker
from robotlab.bus.wire.protocol import pack, unpack
from tests.waiting import wait_until


def started(journal: str, hold: float) -> EmbeddedBroker:
    return EmbeddedBroker(config=BrokerConfig(heartbeat=0.2, journal=journal, hold=hold)).start()


def effects_of(broker: EmbeddedBroker, key: tuple[str, str]) -> list[str] | None:
    """What the broker keeps of the side-effect calls done on the message ``key``."""
    record = broker._broker.deliveries.active.get(key)  # type: ignore[union-attr]
    return None if record is None else record.effects


def test_a_later_attempt_after_a_restart_is_told_which_calls_completed(tmp_path: Path) -> None:
    journal = str(tmp_path / "broker.db")
    first = started(journal, hold=30.0)
    taken: list[Any] = []
    bob_1 = bus.BusClient(first.url, name="bob", instance="bob-1")
    bob_1.on_message(lambda delivery, message: taken.append(message), manual=True)  # unsettled
    alice = bus.BusClient(first.url, name="alice", instance="alice-1")
    try:
        # Given bob-1 working on a pooled message, which reports one side-effect call done
        bob_1.start()
        alice.start().send("bob", "refund order 7", any=True)
        [message] = wait_until(lambda: taken, message="bob-1 has the message")
        done = f"alice-1/{message.id}:1"
        bob_1.effect_done(message, "eve-1/forged:1")  # not a call of this message: ignored
        bob_1.effect_done(message, done)
        wait_until(lambda: effects_of(first, ("alice-1", message.id)) == [done],
                   message="the broker keeps the completed call")
    finally:
        first.stop()  # the message is journaled with its owner and its completed call
        alice.close(drain=0)
        bob_1.close(drain=0)
    # When bob-1 never comes back to the broker started again on the journal
    second = started(journal, hold=1.0)
    runs: list[Any] = []
    bob_2 = bus.BusClient(second.url, name="bob", instance="bob-2").on_message(runs.append)
    try:
        bob_2.start()
        wait_until(lambda: runs, timeout=10, message="the message given to bob-2")
    finally:
        bob_2.close()
        second.stop()
    # Then bob-2's attempt is told which call the first attempt completed
    assert [(m.content, m.attempt, m.effects_done) for m in runs] == [
        ("refund order 7", 2, (done,))]
    assert taken[0].effects_done == ()


def restored(path: str) -> list[Any]:
    """The unsettled messages a broker started on the journal at ``path`` takes back."""
    reopened = Journal(path, 64 << 20, interval=60)
    try:
        return reopened.restore().messages
    finally:
        reopened.close()


def put(journal: Journal, message_id: str) -> None:
    journal.put(("alice-1", message_id), {"id": message_id, "to": "bob", "any": True}, b"body",
                "alice-1", message_id)


def test_effects_are_written_with_the_message_or_after_it_and_read_back(tmp_path: Path) -> None:
    path = str(tmp_path / "broker.db")
    journal = Journal(path, 64 << 20, interval=60)
    try:
        put(journal, "done-before-written")
        journal.effects(("alice-1", "done-before-written"), ["alice-1/done-before-written:1"])
        put(journal, "done-after-written")
        put(journal, "none-done")
        assert journal.commit(everything=True)
        later = ["alice-1/done-after-written:1", "alice-1/done-after-written:2"]
        journal.effects(("alice-1", "done-after-written"), later)
        assert journal.due(0.0)  # a completed side effect is worth a commit now
        assert journal.commit()
        snapshot = journal.snapshot()
    finally:
        journal.close()
    effects = {row[3][1]: row[6] for row in restored(path)}
    assert effects == {"done-before-written": ["alice-1/done-before-written:1"],
                       "done-after-written": later, "none-done": None}
    assert sorted((row[2], unpack(row[0])) for row in snapshot["effects"]) == [
        ("done-after-written", later), ("done-before-written", ["alice-1/done-before-written:1"])]


def test_a_journal_from_before_effects_gets_the_column_and_keeps_its_messages(
        tmp_path: Path) -> None:
    path = tmp_path / "broker.db"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE messages (sender TEXT NOT NULL, id TEXT NOT NULL, notify TEXT,
            receipt_id TEXT NOT NULL, header BLOB NOT NULL, body BLOB NOT NULL, owner TEXT,
            UNIQUE (sender, id));""")
    old.execute("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)",
                ("alice-1", "m1", "alice-1", "m1", pack({"id": "m1", "to": "bob"}), b"", "bob-1"))
    old.commit()
    old.close()
    journal = Journal(str(path), 64 << 20, interval=60)
    try:
        journal.restore()
        journal.effects(("alice-1", "m1"), ["alice-1/m1:1"])
        assert journal.commit()
    finally:
        journal.close()
    [(header, _, _, key, _, owner, effects)] = restored(str(path))
    assert (header["id"], key, owner, effects) == ("m1", ("alice-1", "m1"), "bob-1",
                                                   ["alice-1/m1:1"])
