"""Who answered each ``any`` message is written within ``ANSWERED_INTERVAL``, riding along with
any commit before that: under steady traffic to a pool, a commit every 10 ms for these rows
alone put about 3 GiB an hour through the write-ahead log (docs/durability.md)."""

from __future__ import annotations

import time
from pathlib import Path

from robotlab.broker.journal import INTERVAL, Journal
from robotlab.broker.journal_changes import ANSWERED_INTERVAL
from tests.waiting import wait_until

KEY = ("alice-1", "m1")


def answered_on_disk(journal: Journal) -> dict[tuple[str, str], str]:
    """The ``answered`` rows in the file (what a restart reads back), on the journal's own
    connection: the file is locked to it."""
    return {(sender, id_): owner for sender, id_, owner
            in journal._db.execute("SELECT sender, id, owner FROM answered")}


def test_a_row_alone_waits_for_its_own_interval_not_the_commit_interval(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        journal.restore()
        noted = time.monotonic()
        journal.answered(KEY, "w-1")
        # The loop is not woken for it a commit interval later, and a commit then skips it
        due = journal.next_commit()
        assert due is not None and due >= noted + ANSWERED_INTERVAL
        assert not journal.due(noted + 2 * INTERVAL)
        assert journal.commit() and answered_on_disk(journal) == {}
        # Once its interval is over, the loop's commit writes it
        wait_until(lambda: journal.commit() and answered_on_disk(journal) == {KEY: "w-1"},
                   timeout=10 * ANSWERED_INTERVAL, message="the answered row written")
        assert journal.next_commit() is None
    finally:
        journal.close()


def test_a_row_rides_along_with_a_commit_that_writes_something_else(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        journal.restore()
        journal.answered(KEY, "w-1")
        journal.name_seen("w")  # a change due within the commit interval
        assert journal.commit() and answered_on_disk(journal) == {KEY: "w-1"}
        assert journal.next_commit() is None
    finally:
        journal.close()


def test_a_row_not_yet_due_is_written_when_the_broker_closes(tmp_path: Path) -> None:
    path = str(tmp_path / "broker.db")
    journal = Journal(path, 1 << 20)
    journal.restore()
    journal.answered(KEY, "w-1")
    journal.close()
    again = Journal(path, 1 << 20)
    try:
        assert again.restore().answered == {KEY: "w-1"}
    finally:
        again.close()
