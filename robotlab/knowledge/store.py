"""``DurableStore``: knowledge that outlives a process, in one SQLite database with FTS5.

The Ruby gem keeps one YAML file per domain and rewrites it whole under a ``flock``. Here
each store is one SQLite file (``<path>/knowledge.sqlite3``) in WAL mode, because:

- a record is one ``INSERT ... ON CONFLICT DO UPDATE``, atomic across processes, so two
  processes recording into one domain lose nothing and a confirmation is never lost to a
  read-modify-write race;
- readers never block the writer (WAL), and a crash mid-write leaves the last commit intact;
- recall is an FTS5 query with the ``trigram`` tokenizer, which matches any word of three or
  more characters as a case-insensitive substring, exactly the gem's rule, without loading
  every entry of every domain into memory.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from robotlab.ipc.shared_sqlite import set_up
from robotlab.knowledge.entry import Entry, domain_key

__all__ = ["DEFAULT_PATH", "DurableStore"]

DEFAULT_PATH = "~/.robot_lab/durable"
_COLUMNS = "content, reasoning, category, domain, confidence, use_count, created_at, updated_at"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    domain_key TEXT NOT NULL,
    content_key TEXT NOT NULL,
    content TEXT NOT NULL, reasoning TEXT NOT NULL, category TEXT NOT NULL, domain TEXT NOT NULL,
    confidence REAL NOT NULL, use_count INTEGER NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    UNIQUE (domain_key, content_key)
);
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(
    content, domain, content='entries', content_rowid='id', tokenize='trigram');
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts(rowid, content, domain) VALUES (new.id, new.content, new.domain);
END;
CREATE TRIGGER IF NOT EXISTS entries_ad AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, content, domain)
        VALUES ('delete', old.id, old.content, old.domain);
END;
"""
# Confirming adds 0.1 (capped at 1.0) and counts a use; rounding keeps 0.1 + 0.1 == 0.2.
_UPSERT = f"""
INSERT INTO entries (domain_key, content_key, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (domain_key, content_key) DO UPDATE SET
    confidence = round(min(1.0, confidence + 0.1), 10), use_count = use_count + 1,
    updated_at = excluded.updated_at
"""


def _match_expression(query: str) -> str | None:
    words = [w for w in str(query).split() if len(w) >= 3]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words) or None


class DurableStore:
    """Entries by domain, shared by every process that opens the same ``path``.

    Args:
        path: the store's directory (created on first use).
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_PATH) -> None:
        self.path = Path(path).expanduser()
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            self.path.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path / "knowledge.sqlite3", timeout=30, isolation_level=None)
            db.execute("PRAGMA busy_timeout=30000")
            set_up(db, _SCHEMA)
            self._local.db = db
        return db

    def record(self, entry: Entry) -> Entry:
        """Add ``entry``, or confirm the entry with the same content in its domain.

        Content is compared ignoring case.

        Returns:
            the entry as stored now.
        """
        key = domain_key(entry.domain)
        content_key = entry.content.strip().lower()
        values = (key, content_key, entry.content, entry.reasoning, str(entry.category),
                  entry.domain, entry.confidence, entry.use_count, entry.created_at,
                  entry.updated_at)
        db = self._db()
        db.execute(_UPSERT, values)
        row = db.execute(f"SELECT {_COLUMNS} FROM entries WHERE domain_key = ? AND content_key = ?",
                         (key, content_key)).fetchone()
        return Entry(*row)

    def confirm(self, entry: Entry) -> Entry:
        """Confirm a stored entry: confidence +0.1 (capped at 1.0), use_count +1."""
        return self.record(entry)

    def recall(self, query: str, domain: str | None = None,
               min_confidence: float = 0.0) -> list[Entry]:
        """Entries any of whose query words (3+ characters) occurs in "content domain".

        Case is ignored.

        Best first: highest confidence, then most used.
        """
        expression = _match_expression(query)
        if expression is None:
            return []
        columns = ', '.join('e.' + c.strip() for c in _COLUMNS.split(','))
        sql = (f"SELECT {columns} FROM entries_fts "
               "JOIN entries e ON e.id = entries_fts.rowid "
               "WHERE entries_fts MATCH ? AND e.confidence >= ?")
        params: list[Any] = [expression, min_confidence]
        if domain is not None:
            sql += " AND e.domain_key = ?"
            params.append(domain_key(domain))
        rows = self._db().execute(sql + " ORDER BY e.confidence DESC, e.use_count DESC, e.id",
                                  params)
        return [Entry(*row) for row in rows]

    def entries(self, domain: str | None = None) -> list[Entry]:
        """Every entry (of one domain, or all), oldest first."""
        where, params = ((" WHERE domain_key = ?", [domain_key(domain)]) if domain is not None
                         else ("", []))
        rows = self._db().execute(f"SELECT {_COLUMNS} FROM entries{where} ORDER BY id", params)
        return [Entry(*row) for row in rows]

    def domains(self) -> list[str]:
        """The normalised names of the domains that hold entries."""
        rows = self._db().execute("SELECT DISTINCT domain_key FROM entries ORDER BY 1")
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close this thread's connection (others close when their thread's store goes away)."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
