"""Folding the active journal's commits into one batch: the peer's file ends as it would have
with every commit written in turn (a property checked on real SQLite journal files)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from robotlab.broker.journal_changes import Changes, empty, write
from robotlab.broker.journal_file import open_file
from robotlab.broker.replica_batch import Batch

KEYS = st.tuples(st.sampled_from(["alice", "carol"]), st.sampled_from(["m1", "m2", "m3"]))
LETTERS = st.sampled_from(["d1", "d2", "d3"])


@st.composite
def commits(draw: st.DrawFn) -> Changes:
    """One commit as the journal writes it, over a few keys, so changes meet."""
    changes = empty()
    changes["settled"] = draw(st.lists(KEYS, max_size=2, unique=True))
    changes["puts"] = [
        [sender, mid, "n", "r", b"h", draw(st.binary(max_size=3))]
        for sender, mid in draw(st.lists(KEYS, max_size=2, unique=True))]
    changes["owners"] = [[draw(st.sampled_from(["bob-1", "bob-2"])), sender, mid]
                         for sender, mid in draw(st.lists(KEYS, max_size=2, unique=True))]
    changes["effects"] = [[draw(st.sampled_from([b"\x91\xa1k", b"\x92\xa1k\xa1j"])), sender, mid]
                          for sender, mid in draw(st.lists(KEYS, max_size=2, unique=True))]
    changes["purge"] = draw(st.integers(0, 9)) == 0  # rare, so letters build up between
    changes["dropped"] = [(d,) for d in draw(st.lists(LETTERS, max_size=1, unique=True))]
    changes["letters"] = [
        [{"d1": 1, "d2": 2, "d3": 3}[d], d, "timeout", "", b"h", b"b", 1.0, 0]
        for d in draw(st.lists(LETTERS, max_size=1, unique=True))]
    # an older peer's rows have no time
    changes["names"] = [(n, *draw(st.sampled_from([(), (1.0,), (2.0,)])))
                        for n in draw(st.lists(st.sampled_from(["bob", "eve"]), max_size=1))]
    changes["answered"] = [[sender, mid, draw(st.sampled_from(["bob-1", "bob-2"]))]
                           for sender, mid in draw(st.lists(KEYS, max_size=1, unique=True))]
    return changes


def tables(db: sqlite3.Connection) -> dict[str, object]:
    return {
        "messages": sorted(db.execute("SELECT * FROM messages")),
        "letters": sorted(db.execute("SELECT * FROM dead_letters")),
        "names": sorted(db.execute("SELECT * FROM names")),
        "answered": sorted(db.execute("SELECT * FROM answered")),
    }


@settings(max_examples=200, deadline=None)
@given(before=st.lists(commits(), max_size=3), batches=st.lists(st.lists(commits(), min_size=1,
                                                                         max_size=6),
                                                                max_size=3))
def test_a_folded_batch_writes_what_its_commits_write_in_turn(
        tmp_path_factory, before: list[Changes], batches: list[list[Changes]]) -> None:
    folder = Path(tmp_path_factory.mktemp("batch"))
    one_by_one, folded = (open_file(str(folder / name), 1000) for name in ("a.db", "b.db"))
    try:
        # Given two files with the same history
        for changes in before:
            write(one_by_one, changes)
            write(folded, changes)
        # When one writes each commit in turn and the other each batch folded
        for batch in batches:
            each = Batch()
            for changes in batch:
                write(one_by_one, changes)
                each.fold(changes)
            write(folded, each.changes())
            # Then after every batch the two files hold the same rows
            assert tables(folded) == tables(one_by_one)
    finally:
        one_by_one.close()
        folded.close()


def test_a_put_settled_in_the_same_batch_is_not_written() -> None:
    batch = Batch()
    put = empty()
    put["puts"] = [["alice", "m1", "n", "r", b"h", b"body" * 1000]]
    put["owners"] = [["bob-1", "alice", "m1"]]
    settle = empty()
    settle["settled"] = [("alice", "m1")]
    settle["answered"] = [["alice", "m1", "bob-1"]]
    batch.fold(put)
    batch.fold(settle)
    changes = batch.changes()
    assert (changes["puts"], changes["owners"]) == ([], [])
    assert changes["settled"] == [("alice", "m1")]  # the peer may hold it from an earlier batch
    assert changes["answered"] == [["alice", "m1", "bob-1"]]
    assert batch.commits == 2
