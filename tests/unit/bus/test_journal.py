"""The broker's journal and holds through the real broker code (embedded, over inproc://).

A broker stopped and started again on the same journal file stands in for a restart here;
tests/process/test_durability_processes.py does the same with kill -9 and real processes.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from robotlab import bus
from robotlab.broker.dlq import DeadLetter
from robotlab.broker.journal import GRACE_PER_BYTE, Journal
from robotlab.bus import BrokerConfig, EmbeddedBroker
from robotlab.bus.wire.protocol import pack
from robotlab.cli.robotlab_cli import main
from robotlab.errors import Busy, ConfigError, Undeliverable
from tests.waiting import wait_until


@pytest.fixture
def brokers():
    started: list[EmbeddedBroker] = []

    def start(journal: Path, **settings) -> EmbeddedBroker:
        config = BrokerConfig(heartbeat=0.2, journal=str(journal), **settings)
        broker = EmbeddedBroker(config=config).start()
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.stop()


def test_held_messages_and_dead_letters_survive_a_restart(brokers, tmp_path: Path) -> None:
    journal = tmp_path / "broker.db"
    first = brokers(journal, hold=30.0)
    with bus.connect(first.url, name="bob"):
        pass  # bob is known from now on
    with bus.connect(first.url, name="alice", instance="alice-1") as alice:
        with pytest.raises(Undeliverable):
            alice.send("nobody", "lost").wait(5)  # a name never seen: dead-lettered at once
        alice.send("bob", "while you were out")  # bob is known and away: held
        wait_until(lambda: alice.admin("stats")["held"] == 1, message="the message is held")
    first.stop()

    second = brokers(journal, hold=30.0)
    seen: list = []
    bob = bus.BusClient(second.url, name="bob").on_message(lambda m: seen.append(m.content))
    with bob.start():  # the handler is in place before the held message can arrive
        wait_until(lambda: seen, message="the held message reached bob after the restart")
        with bus.connect(second.url, name="carol") as carol:
            letters = carol.admin("dlq.list")
    assert seen == ["while you were out"]
    assert [(d["reason"], d["to"]) for d in letters] == [("undeliverable", "nobody")]


def test_a_full_journal_answers_busy_and_drops_nothing(brokers, tmp_path: Path) -> None:
    broker = brokers(tmp_path / "broker.db", journal_max_bytes=1024 * 1024)
    with bus.connect(broker.url, name="bob") as bob, bus.connect(broker.url, name="alice") as alice:
        bob.on_message(lambda delivery, message: None, manual=True)  # holds every delivery unacked
        big = "x" * 300_000
        kept = [alice.send("bob", big) for _ in range(3)]
        with pytest.raises(Busy, match="journal is full"):
            alice.send("bob", big, busy_retry=0).wait(5)
        stats = alice.admin("stats")
        assert not any(t.settled for t in kept)  # the three in the journal wait, untouched
    assert stats["in_flight"] == 3 and stats["journal_full"] >= 1


def test_dead_letters_never_fill_the_journal_against_live_sends(brokers, tmp_path: Path) -> None:
    # Given a journal of 1 MiB, whose dead letters may then take half
    broker = brokers(tmp_path / "broker.db", journal_max_bytes=1024 * 1024)
    with bus.connect(broker.url, name="bob") as bob, bus.connect(broker.url, name="alice") as alice:
        bob.on_message(lambda message: None)
        # When a night's failures dead-letter more than the whole journal holds
        big = "x" * 100_000
        for _ in range(12):
            with pytest.raises(Undeliverable):
                alice.send("nobody", big, busy_retry=0).wait(5)
        # Then live sends still have room, and the oldest letters went, counted
        alice.send("bob", big, busy_retry=0).wait(5)
        stats = alice.admin("stats")
    assert stats["journal_full"] == 0
    assert stats["dlq_bytes"] <= 512 * 1024 and stats["dlq_size"] == 5
    assert stats["dlq_evicted"] == 7


def test_a_restart_under_a_smaller_dead_letter_bound_keeps_the_newest(brokers,
                                                                      tmp_path: Path) -> None:
    journal = tmp_path / "broker.db"
    first = brokers(journal, journal_max_bytes=4 << 20, dlq_max_bytes=3 << 20)
    with bus.connect(first.url, name="alice") as alice:
        sent = [alice.send("nobody", "x" * 100_000, busy_retry=0) for _ in range(8)]
        for tracker in sent:
            with pytest.raises(Undeliverable):
                tracker.wait(5)
    first.stop()
    again = brokers(journal, journal_max_bytes=4 << 20, dlq_max_bytes=300_000)
    kept = [letter.header["id"] for letter in again._broker.dlq.list()]
    again.stop()
    assert kept == [tracker.id for tracker in sent[-2:]]
    with sqlite3.connect(journal) as db:  # the evictions written, not only made in memory
        assert db.execute("SELECT count(*) FROM dead_letters").fetchone() == (2,)


def test_a_dead_letter_bound_the_journal_cannot_hold_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="dlq max bytes must be positive and, with a journal, "
                                          "below its max bytes"):
        BrokerConfig(journal=str(tmp_path / "broker.db"), journal_max_bytes=1 << 20,
                     dlq_max_bytes=1 << 20)


def test_a_second_broker_on_the_same_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "broker.db"
    first = Journal(str(path), 1 << 20)
    try:
        with pytest.raises(ConfigError,
                           match=f"journal {path} cannot be used: it is locked by another broker"):
            Journal(str(path), 1 << 20)
    finally:
        first.close()


@pytest.mark.parametrize("make", ["corrupt", "unwritable"])
def test_a_bad_journal_is_a_one_line_start_up_error_naming_the_file(tmp_path: Path,
                                                                    make: str) -> None:
    if make == "corrupt":
        path = tmp_path / "broker.db"
        path.write_bytes(b"this is not an SQLite database, whatever its name says" * 100)
    else:
        (tmp_path / "file").write_text("")
        path = tmp_path / "file" / "broker.db"  # its folder is a file: nothing can be written there
    result = CliRunner().invoke(main, ["broker", "--bind", f"ipc://{tmp_path}/b.sock", "--journal",
                                       str(path)])
    assert result.exit_code == 78, result.output
    assert result.output.count("\n") == 1 and f"journal {path} cannot be used" in result.output


def test_a_message_settled_before_the_commit_leaves_nothing_due(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        journal.put(("sender", "m1"), {"id": "m1", "to": "echo"}, b"body", "sender", "m1")
        assert journal.next_commit() is not None
        journal.settle(("sender", "m1"))
        assert journal.commit()
        # Nothing is left to write: no commit may fall due (a stale one wakes the loop every
        # millisecond and commits every later message the moment it is accepted).
        assert journal.next_commit() is None and not journal.due(float("inf"))
        assert journal.size == 0 and journal.restore().messages == []
    finally:
        journal.close()


def test_a_put_falls_due_an_interval_after_its_own_acceptance(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20, interval=0.5)
    try:
        journal.put(("sender", "m1"), {"id": "m1", "to": "echo"}, b"body", "sender", "m1")
        first_due = journal.next_commit()
        assert first_due is not None
        wait_until(lambda: time.monotonic() > first_due - 0.5,
                   message="the clock moved past m1's put")
        journal.put(("sender", "m2"), {"id": "m2", "to": "echo"}, b"body", "sender", "m2")
        second_due = journal.next_commit()
        journal.settle(("sender", "m1"))
        # m1 settled before it fell due: only m2, accepted later, is left, and it is due an
        # interval after its own put (were m1's time to keep counting, m2 would be written
        # whenever the interval since m1 ran out, however young m2 was).
        due = journal.next_commit()
        assert due is not None and due > first_due and not journal.due(first_due)
        assert journal.due(due) and second_due == first_due  # the oldest put sets the time
        journal.settle(("sender", "m2"))
        assert journal.next_commit() is None and journal.commit()
        assert journal.restore().messages == []
    finally:
        journal.close()


def stored(journal: Journal) -> list[str]:
    """The ids of the messages in the journal's file, in file order (what a restart restores)."""
    return [row[0] for row in journal._db.execute("SELECT id FROM messages ORDER BY rowid")]


def put(journal: Journal, message_id: str, body: bytes = b"body") -> None:
    journal.put(("sender", message_id), {"id": message_id, "to": "echo"}, body, "sender",
                message_id)


def test_a_large_body_falls_due_later_by_the_time_it_takes_to_move(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 64 << 20, interval=0.01)
    try:
        put(journal, "small")
        small_due = journal.next_commit()
        large = bytes(4 << 20)
        put(journal, "large", large)
        assert journal.next_commit() == small_due  # the earliest due sets the loop's timeout
        journal.settle(("sender", "small"))
        large_due = journal.next_commit()
        assert small_due is not None and large_due is not None
        # Put after the small one, so at least its body's grace later (a flat interval wrote
        # every large body, the round trip that moves it being longer than the interval).
        assert large_due - small_due >= (len(large) - len(b"body")) * GRACE_PER_BYTE
        journal.settle(("sender", "large"))
        assert journal.next_commit() is None and journal.commit() and stored(journal) == []
    finally:
        journal.close()


def test_a_commit_writes_the_puts_up_to_the_last_due_one_and_leaves_the_younger(
        tmp_path: Path) -> None:
    path = tmp_path / "broker.db"
    journal = Journal(str(path), 64 << 20, interval=0.05)
    put(journal, "first")
    wait_until(lambda: journal.due(time.monotonic()), message="the first put fell due")
    put(journal, "young")  # not due for another interval
    assert journal.commit()
    assert stored(journal) == ["first"]  # a receipt's commit does not write what is still in flight
    assert journal.next_commit() is not None and not journal.due(time.monotonic() - 1)
    # A large body put before a small one is written with it when the small one falls due,
    # though its own grace is not over: the file keeps the order they came in.
    put(journal, "big", bytes(8 << 20))
    put(journal, "after")
    wait_until(lambda: journal.due(time.monotonic()), message="'young' fell due")
    assert journal.commit()
    assert stored(journal)[:2] == ["first", "young"]
    journal.close()  # a clean stop writes everything
    reopened = Journal(str(path), 64 << 20)
    try:
        assert [message[3][1] for message in reopened.restore().messages] == ["first", "young",
                                                                              "big", "after"]
    finally:
        reopened.close()


def test_a_replayed_dead_letter_is_written_with_the_letters_removal(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 64 << 20, interval=60)
    try:
        letter = DeadLetter("dlq-1", "undeliverable", "nobody", {"id": "m1", "to": "away"}, b"body",
                            time.time())
        journal.letter_added(1, letter)
        assert journal.commit(everything=True)
        # dlq.replay: the letter goes and its message comes back under a new id, in one turn
        # whose admin reply waits for this commit. Nobody else holds a copy of the message.
        journal.letter_removed("dlq-1")
        put(journal, "replay-1")
        assert not journal.due(time.monotonic())  # not due by its own time (interval=60)...
        assert journal.commit()
        assert stored(journal) == ["replay-1"]  # ...but written with the removal all the same
        assert journal._db.execute("SELECT count(*) FROM dead_letters").fetchone()[0] == 0
    finally:
        journal.close()


def test_a_dead_letters_maybe_ran_survives_a_restart_and_an_older_journal_gets_it(
        tmp_path: Path) -> None:
    path = tmp_path / "broker.db"
    # A journal from before the column: its time-outs were handed out, its undeliverables not
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE dead_letters (seq INTEGER PRIMARY KEY, dlq_id TEXT UNIQUE NOT NULL,
            reason TEXT NOT NULL, detail TEXT NOT NULL, header BLOB NOT NULL, body BLOB NOT NULL,
            at REAL NOT NULL);""")
    old.executemany("INSERT INTO dead_letters VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(1, "dl-1", "timeout", "late", pack({"id": "m1", "to": "bob"}), b"", 1.0),
                     (2, "dl-2", "undeliverable", "nobody", pack({"id": "m2", "to": "away"}), b"",
                      2.0)])
    old.commit()
    old.close()
    journal = Journal(str(path), 64 << 20, interval=60)
    try:
        journal.letter_added(3, DeadLetter("dl-3", "nacked", "it failed", {"id": "m3", "to": "bob"},
                                           b"", 3.0, True))
        assert journal.commit(everything=True)
    finally:
        journal.close()
    reopened = Journal(str(path), 64 << 20, interval=60)
    try:
        letters = reopened.restore().letters
    finally:
        reopened.close()
    assert [(row[1], row[7]) for row in letters] == [("dl-1", True), ("dl-2", False),
                                                     ("dl-3", True)]


def test_the_owner_of_a_message_is_written_with_it_or_after_it_and_restored(tmp_path: Path) -> None:
    path = str(tmp_path / "broker.db")
    journal = Journal(path, 64 << 20, interval=60)
    try:
        put(journal, "handed-before-written")
        journal.owned(("sender", "handed-before-written"), "bob-1")
        put(journal, "handed-after-written")
        put(journal, "never-handed")
        assert journal.commit(everything=True)
        journal.owned(("sender", "handed-after-written"), "bob-2")  # a later hand-over: an update
        assert journal.commit()
    finally:
        journal.close()
    reopened = Journal(path, 64 << 20, interval=60)
    try:
        owners = {row[3][1]: row[5] for row in reopened.restore().messages}
    finally:
        reopened.close()
    assert owners == {"handed-before-written": "bob-1", "handed-after-written": "bob-2",
                      "never-handed": None}


def test_a_pooled_message_waits_for_its_owner_after_a_restart_then_goes_to_another(
        brokers, tmp_path: Path) -> None:
    journal = tmp_path / "broker.db"
    first = brokers(journal, hold=30.0)
    handed: list = []
    owner = bus.BusClient(first.url, name="bob", instance="bob-1").on_message(
        lambda delivery, message: handed.append(message), manual=True)  # takes it, never settles
    with owner.start(), bus.connect(first.url, name="alice", instance="alice-1") as alice:
        alice.send("bob", "refund order 7", any=True)
        wait_until(lambda: handed, message="bob-1 has the message")
        first.stop()  # its owner, bob-1, is journaled with it
    second = brokers(journal, hold=1.0)
    runs: list = []
    other = bus.BusClient(second.url, name="bob", instance="bob-2")
    other.on_message(lambda message: runs.append(message))
    with other.start():
        # bob-2 is back first, but the message waits for bob-1 (which may be working on it)
        # through the hold; bob-1 never returns, so then it goes to bob-2, marked as attempt 2
        wait_until(lambda: runs, timeout=10, message="the message given to bob-2 after the hold")
    assert [(m.content, m.attempt) for m in runs] == [("refund order 7", 2)]



def test_the_reply_to_a_request_in_the_file_leaves_with_the_commit_that_settles_it(
        brokers, tmp_path: Path) -> None:
    broker = brokers(tmp_path / "broker.db", hold=30.0)
    journal = broker._broker.journal
    in_file: list[bool] = []

    def work(message):
        # a task that outlives the journal's interval: the request is written while it runs
        in_file.append(wait_until(lambda: journal.written(("alice-1", message.id)), timeout=10,
                                  message="the request in the file"))
        return message.content

    owner = bus.BusClient(broker.url, name="bob", instance="bob-1").on_message(work)
    with owner.start(), bus.connect(broker.url, name="alice", instance="alice-1") as alice:
        # Given a pooled request, written to the file while its owner works on it
        tracker = alice.send_request("bob", "refund order 7", any=True)
        # When alice has its reply
        assert tracker.reply(10).content == "refund order 7"
        # Then the file no longer holds the request: a broker killed now would not hand it out
        # again (to another instance, should bob-1 die too) for a reply alice already has
        assert in_file == [True]
        assert not journal.written(("alice-1", tracker.id))


def test_the_file_holds_a_pool_member_from_its_first_any_message_until_its_bye(
        brokers, tmp_path: Path) -> None:
    broker = brokers(tmp_path / "broker.db", hold=30.0)
    journal = broker._broker.journal

    def file_members() -> dict[str, str]:
        return dict(journal.members.held)

    worker = bus.BusClient(broker.url, name="w", instance="w-1").on_message(
        lambda message: message.content)
    with worker.start(), bus.connect(broker.url, name="alice", instance="alice-1") as alice:
        # Given a member of w that was never handed an `any` message: not in the file
        assert alice.request("w", "plain", timeout=10).content == "plain"
        assert file_members() == {}
        # When it is handed one, it is in the file (written before the message left)
        assert alice.request("w", "pooled", any=True, timeout=10).content == "pooled"
        assert file_members() == {"w-1": "w"}
    # Then its BYE takes it out: a restart need not wait for it
    wait_until(lambda: file_members() == {}, timeout=5, message="w-1 out of the file")
