"""The robot names a broker's journal remembers: the most recently seen, and an older file's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from robotlab import bus
from robotlab.broker.journal import Journal
from robotlab.bus import BrokerConfig, EmbeddedBroker


def names_after_restart(path: Path, names_kept: int) -> list[str]:
    journal = Journal(str(path), 64 << 20, interval=60, names_kept=names_kept)
    try:
        return journal.restore().names
    finally:
        journal.close()


def see(path: Path, names_kept: int, *batches: list[str]) -> None:
    """Each batch of names said HELLO in its own commit, in order."""
    journal = Journal(str(path), 64 << 20, interval=60, names_kept=names_kept)
    try:
        for batch in batches:
            for name in batch:
                journal.name_seen(name)
            assert journal.commit(everything=True)
    finally:
        journal.close()


def test_the_journal_keeps_the_names_seen_most_recently_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "broker.db"
    # Given three robots seen, then the first seen again and a fourth new
    see(path, 3, ["a", "b", "c"], ["a", "d"])
    # Then the one seen longest ago is forgotten, and a restart gets the rest oldest first
    assert names_after_restart(path, 3) == ["c", "a", "d"]


def test_a_storm_of_new_names_leaves_the_file_no_larger_than_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "broker.db"
    see(path, 50, *[[f"storm-{i}-{j}" for j in range(10)] for i in range(30)])
    kept = names_after_restart(path, 50)
    assert kept == [f"storm-{i}-{j}" for i in range(25, 30) for j in range(10)]


def test_an_older_journals_names_are_kept_as_seen_longest_ago(tmp_path: Path) -> None:
    path = tmp_path / "broker.db"
    # A journal from before names had a time
    old = sqlite3.connect(path)
    old.executescript("CREATE TABLE names (name TEXT PRIMARY KEY) WITHOUT ROWID;"
                      "INSERT INTO names VALUES ('old-1'), ('old-2');")
    old.close()
    see(path, 10, ["new-1"], ["new-2"])
    restored = names_after_restart(path, 10)
    assert sorted(restored[:2]) == ["old-1", "old-2"] and restored[2:] == ["new-1", "new-2"]
    # and they are the first to go once there are too many
    see(path, 3, ["new-3"])
    assert names_after_restart(path, 3) == ["new-1", "new-2", "new-3"]


def test_a_broker_writes_a_robots_name_at_each_hello_and_no_clients(tmp_path: Path) -> None:
    path = tmp_path / "broker.db"

    def hello_then_seen() -> dict[str, float]:
        """A robot and a client say HELLO to a broker on the journal; what its file then says."""
        broker = EmbeddedBroker(config=BrokerConfig(journal=str(path))).start()
        try:
            with bus.BusClient(broker.url, name="bob", role="robot").start(), \
                    bus.BusClient(broker.url, name="a-client").start():
                pass
        finally:
            broker.stop()  # the file is locked for the broker's life
        db = sqlite3.connect(path)
        try:
            return dict(db.execute("SELECT name, seen FROM names"))
        finally:
            db.close()

    first, second = hello_then_seen(), hello_then_seen()
    assert list(first) == list(second) == ["bob"] and second["bob"] > first["bob"]
