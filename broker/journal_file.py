"""Opening the broker's journal file: its SQLite settings, the integrity check, the schema and
the changes that bring an older journal up to it (see :mod:`robotlab.broker.journal`); and
reading back what it holds at start-up."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Final

from robotlab.bus.wire.protocol import unpack
from robotlab.errors import ConfigError

from .journal_contract import Key, Restored

log = logging.getLogger("robotlab.broker")

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    sender TEXT NOT NULL, id TEXT NOT NULL, notify TEXT, receipt_id TEXT NOT NULL,
    header BLOB NOT NULL, body BLOB NOT NULL, owner TEXT, effects BLOB, UNIQUE (sender, id));
CREATE TABLE IF NOT EXISTS dead_letters (
    seq INTEGER PRIMARY KEY, dlq_id TEXT UNIQUE NOT NULL, reason TEXT NOT NULL,
    detail TEXT NOT NULL, header BLOB NOT NULL, body BLOB NOT NULL, at REAL NOT NULL,
    maybe_ran INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS names (
    name TEXT PRIMARY KEY, seen REAL NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS answered (
    sender TEXT NOT NULL, id TEXT NOT NULL, owner TEXT NOT NULL, UNIQUE (sender, id));
CREATE TABLE IF NOT EXISTS members (instance TEXT PRIMARY KEY, name TEXT NOT NULL) WITHOUT ROWID;
"""


CHECKPOINT_PAGES: Final = 8192
"""The write-ahead log's size (pages of 4 KiB: 32 MiB) past which a commit also checkpoints (a
copy into the file, with two fsyncs; SQLite's default of 1,000 pages put one inside nearly every
commit of a large body); below it the broker checkpoints when its loop is idle
(``Journal.idle``)."""


CHECKPOINT_SPACING: Final = 1.0
"""The least time between two checkpoints in the loop's idle turns (seconds). Under steady
traffic the loop idles in the gaps between messages, as often as once a commit interval: a
checkpoint each time (two fsyncs) cost a round trip to a pool about 50 µs of the broker's CPU."""


def checkpoint(db: sqlite3.Connection, path: str | None) -> bool:
    """Copy the write-ahead log into the file (a passive checkpoint, which never waits); False
    if that failed (the next commit says so, if the file is failing)."""
    try:
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error as exc:
        log.debug("journal %s: checkpoint failed (%s)", path, exc)
        return False
    return True


def open_file(path: str, checkpoint_pages: int = CHECKPOINT_PAGES) -> sqlite3.Connection:
    """Open (creating it if need be) and lock the journal at ``path``, in WAL mode, checked and
    brought up to the current schema.

    Raises:
        ConfigError: the file cannot be used (locked by another broker, not a journal, unwritable).
    """
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        if db.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
            raise sqlite3.DatabaseError("cannot switch to WAL mode")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA wal_autocheckpoint={checkpoint_pages}")
        # the log shrinks back after a burst
        db.execute(f"PRAGMA journal_size_limit={checkpoint_pages * 4096}")
        if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise sqlite3.DatabaseError("failed its integrity check")
        db.execute("BEGIN IMMEDIATE")  # takes the write lock now: an unwritable file fails here
        for statement in filter(str.strip, SCHEMA.split(";")):
            db.execute(statement)
        _add_columns(db)
        db.execute("COMMIT")
        return db
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(f"journal {path} cannot be used: {_why(exc)}; fix or move it, or pass "
                          "--journal with another path (--no-journal keeps everything in "
                          "memory)") from exc


def _why(exc: BaseException) -> str:
    text = str(exc)
    if "locked" in text:
        return "it is locked by another broker"
    if "not a database" in text or "malformed" in text or "integrity" in text:
        return f"it is not a valid journal ({text})"
    return text


def _add_columns(db: sqlite3.Connection) -> None:
    """Bring a journal written by an older broker up to the schema, keeping what it holds."""
    letter_columns = {row[1] for row in db.execute("PRAGMA table_info(dead_letters)")}
    if "maybe_ran" not in letter_columns:
        # A letter kept for a time-out or a refusal was handed to a member: it may have run.
        db.execute("ALTER TABLE dead_letters ADD COLUMN maybe_ran INTEGER NOT NULL DEFAULT 0")
        db.execute("UPDATE dead_letters SET maybe_ran = 1 WHERE reason IN ('timeout', 'nacked')")
    message_columns = {row[1] for row in db.execute("PRAGMA table_info(messages)")}
    if "owner" not in message_columns:
        # unknown: held for any instance, as before
        db.execute("ALTER TABLE messages ADD COLUMN owner TEXT")
    if "effects" not in message_columns:  # none reported: a later attempt is told of none
        db.execute("ALTER TABLE messages ADD COLUMN effects BLOB")
    if "seen" not in {row[1] for row in db.execute("PRAGMA table_info(names)")}:
        # when each name was last seen is not known: all count as seen longest ago
        db.execute("ALTER TABLE names ADD COLUMN seen REAL NOT NULL DEFAULT 0")
    # the names seen longest ago go first once there are too many (journal_changes.write)
    db.execute("CREATE INDEX IF NOT EXISTS names_by_seen ON names (seen)")


def read_back(db: sqlite3.Connection) -> tuple[Restored, dict[Key, int], dict[str, int]]:
    """What the journal holds, read back at start-up, with the stored bytes of each message (by
    key) and of each dead letter (by dlq id)."""
    restored = Restored()
    sizes: dict[Key, int] = {}
    letter_sizes: dict[str, int] = {}
    rows = db.execute("SELECT sender, id, notify, receipt_id, header, body, owner, effects "
                      "FROM messages ORDER BY rowid")
    for sender, message_id, notify, receipt_id, header, body, owner, effects in rows:
        done = [key for key in unpack(effects) if isinstance(key, str)] if effects else None
        restored.messages.append((unpack(header), body, notify, (sender, message_id), receipt_id,
                                  owner, done or None))
        sizes[(sender, message_id)] = len(header) + len(body)
    for seq, dlq_id, reason, detail, header, body, at, maybe_ran in db.execute(
            "SELECT seq, dlq_id, reason, detail, header, body, at, maybe_ran FROM dead_letters "
            "ORDER BY seq"):
        restored.letters.append((seq, dlq_id, reason, detail, unpack(header), body, at,
                                 bool(maybe_ran)))
        letter_sizes[dlq_id] = len(header) + len(body)
    restored.names = [name for (name,) in db.execute("SELECT name FROM names ORDER BY seen")]
    restored.answered = {(sender, message_id): owner for sender, message_id, owner in
                         db.execute("SELECT sender, id, owner FROM answered ORDER BY rowid")}
    restored.members = dict(db.execute("SELECT instance, name FROM members"))
    return restored, sizes, letter_sizes
