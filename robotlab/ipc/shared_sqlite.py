"""A SQLite file shared by processes: WAL mode and a schema.

Both are set up while another process may be creating the file.

Switching a file to WAL does not wait out SQLite's busy timeout: while a second process is
creating the same file, ``PRAGMA journal_mode=WAL`` answers "database is locked" at once. Both
the document store and the durable knowledge store open their file through :func:`set_up`.
"""

from __future__ import annotations

import sqlite3
import time

SET_UP_SECONDS = 30.0
"""How long to keep trying while another process holds the file (SQLite's busy timeout here)."""


def set_up(db: sqlite3.Connection, schema: str, wal: bool = True) -> None:
    """Switch ``db`` to WAL (unless ``wal`` is False) and run ``schema``, retrying while locked.

    Raises:
        sqlite3.OperationalError: any other failure, or the file still locked after
            ``SET_UP_SECONDS``.
    """
    deadline = time.monotonic() + SET_UP_SECONDS
    while True:
        try:
            if wal:
                db.execute("PRAGMA journal_mode=WAL")
            db.executescript(schema)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
