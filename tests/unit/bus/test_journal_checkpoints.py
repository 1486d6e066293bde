"""The journal copies its write-ahead log into the file in the loop's idle turns, at most once
every ``CHECKPOINT_SPACING``: under steady traffic the loop idles between messages, as often as
once a commit interval, and a checkpoint each time was two fsyncs a commit."""

from __future__ import annotations

import os
from pathlib import Path

from robotlab.broker.journal import Journal
from tests.waiting import wait_until

BODY = b"x" * (256 << 10)


def test_idle_turns_checkpoint_at_most_once_a_spacing(tmp_path: Path) -> None:
    path = str(tmp_path / "broker.db")
    journal = Journal(path, 64 << 20)
    try:
        journal.restore()
        on_file = os.path.getsize(path)
        # Given a commit that wrote a large message: it is in the write-ahead log, not the file
        journal.put(("alice-1", "m1"), {"id": "m1", "to": "bob"}, BODY, "alice-1", "m1")
        assert journal.commit(everything=True)
        assert os.path.getsize(path) == on_file
        # When the loop idles: the log is copied into the file
        journal.idle()
        copied = os.path.getsize(path)
        assert copied > on_file + len(BODY)
        # When another commit follows and the loop idles again at once: no copy yet
        journal.put(("alice-1", "m2"), {"id": "m2", "to": "bob"}, BODY, "alice-1", "m2")
        assert journal.commit(everything=True)
        journal.idle()
        assert os.path.getsize(path) == copied
        # Then an idle turn a spacing later copies it
        wait_until(lambda: (journal.idle(), os.path.getsize(path) > copied)[1],
                   timeout=5, message="the second checkpoint")
    finally:
        journal.close()
