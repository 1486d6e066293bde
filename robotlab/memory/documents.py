"""The document store: texts kept under keys and found again by meaning (spec 18).

``memory.store_document(key, text)`` embeds the text; ``search_documents(query, limit=5)``
embeds the query and returns ``[{"key", "text", "score"}]``, best first, by cosine.

Embeddings come from the memory's ``embedder``: any object with
``embed(texts, kind) -> list[vector]`` (``kind`` is ``"passage"`` or ``"query"``; a vector is a
list of floats, or a sparse ``{term: weight}`` dict). ``robotlab.llm.LiteLLMEmbedder`` calls a
provider's embedding model through litellm; without one, ``LocalEmbedder`` is used: stemmed
term-frequency vectors (``robotlab.text``), which need no network, no download and no model,
and match words rather than meaning.

The documents live in SQLite: in memory for one process, or with ``path`` in
``<path>/documents.sqlite3``, shared by every process that opens it and kept across restarts.
One file in WAL mode, like the knowledge store: each store is one atomic upsert, readers never
block the writer, writers take the lock up front (``BEGIN IMMEDIATE``) and wait their turn
(busy timeout) instead of failing, and a crash mid-write leaves the last commit whole. A
vector is kept as a blob beside the name of the embedder that made it; a search compares only
vectors of the searching embedder, since vectors of two embedders mean nothing to each other.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from robotlab.ipc.shared_sqlite import set_up
from robotlab.text.similarity import cosine, term_vector

__all__ = ["DocumentMethods", "DocumentStore", "Embedder", "LocalEmbedder", "embedder_name"]

Vector = Sequence[float] | dict[str, float]
_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    key TEXT PRIMARY KEY, text TEXT NOT NULL, embedder TEXT NOT NULL, vector BLOB NOT NULL,
    stored INTEGER NOT NULL
);
"""
# "stored" keeps storing order across processes: a replaced key moves to the end, as a dict's would.
_UPSERT = """
INSERT INTO documents (key, text, embedder, vector, stored)
VALUES (?, ?, ?, ?, (SELECT coalesce(max(stored), 0) + 1 FROM documents))
ON CONFLICT (key) DO UPDATE SET text = excluded.text, embedder = excluded.embedder,
    vector = excluded.vector, stored = excluded.stored
"""


class Embedder(Protocol):
    """Turns texts into vectors."""

    def embed(self, texts: list[str], kind: str) -> list[Vector]:
        """One vector per text; ``kind`` is ``"passage"`` (stored) or ``"query"`` (searched)."""
        ...


class LocalEmbedder:
    """Stemmed term-frequency vectors: offline, instant, lexical (no synonyms)."""

    def embed(self, texts: list[str], kind: str) -> list[Vector]:
        """Sparse L2-normalised term vectors."""
        return [term_vector(text) for text in texts]


def embedder_name(embedder: Embedder) -> str:
    """What a stored vector records as its maker: the model, else the embedder's class."""
    return str(getattr(embedder, "model", None) or type(embedder).__name__)


def _pack(vector: Vector) -> bytes:
    if isinstance(vector, dict):
        return b"S" + json.dumps(vector, separators=(",", ":")).encode()
    return b"D" + array("d", vector).tobytes()


def _unpack(blob: bytes) -> Vector:
    if blob[:1] == b"S":
        return {str(k): float(v) for k, v in json.loads(blob[1:]).items()}
    return array("d", blob[1:]).tolist()


def _score(a: Vector, b: Vector) -> float:
    if isinstance(a, dict) or isinstance(b, dict):
        return cosine(dict(a), dict(b)) if isinstance(a, dict) and isinstance(b, dict) else 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class DocumentStore:
    """Texts and their vectors, by key (thread-safe; with ``path``, shared across processes).

    Args:
        embedder: what embeds texts and queries (default ``LocalEmbedder``).
        path: a directory for ``documents.sqlite3`` (created on first use); None keeps the
            documents in this process only.
    """

    def __init__(self, embedder: Embedder | None = None,
                 path: str | os.PathLike[str] | None = None) -> None:
        self.embedder: Embedder = embedder or LocalEmbedder()
        self.path = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        # Called with the lock held. One connection, shared by this store's threads under the lock.
        if self._connection is None:
            target = ":memory:"
            if self.path is not None:
                self.path.mkdir(parents=True, exist_ok=True)
                target = str(self.path / "documents.sqlite3")
            db = sqlite3.connect(target, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout=30000")
            set_up(db, _SCHEMA, wal=self.path is not None)
            self._connection = db
        return self._connection

    def store(self, key: str, text: str) -> None:
        """Keep ``text`` under ``key`` (replacing what was there)."""
        [vector] = self.embedder.embed([str(text)], "passage")
        row = (str(key), str(text), embedder_name(self.embedder), _pack(vector))
        with self._lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(_UPSERT, row)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The ``limit`` best matches for ``query``: ``{"key", "text", "score"}``, best first."""
        [wanted] = self.embedder.embed([str(query)], "query")
        with self._lock:
            rows = self._db().execute("SELECT key, text, vector FROM documents"
                                      " WHERE embedder = ? ORDER BY stored",
                                      (embedder_name(self.embedder),)).fetchall()
        scored = [{"key": key, "text": text, "score": _score(wanted, _unpack(blob))}
                  for key, text, blob in rows]
        scored.sort(key=lambda hit: -hit["score"])
        return scored[: max(int(limit), 0)]

    def keys(self) -> list[str]:
        """Every stored key, in storing order."""
        with self._lock:
            rows = self._db().execute("SELECT key FROM documents ORDER BY stored")
            return [row[0] for row in rows]

    def delete(self, key: str) -> bool:
        """Forget ``key``; False when it was not there."""
        with self._lock:
            deleted = self._db().execute("DELETE FROM documents WHERE key = ?", (str(key),))
            return deleted.rowcount > 0

    def close(self) -> None:
        """Close the database (an in-memory store forgets its documents)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


class DocumentMethods:
    """The document-store methods of ``Memory`` (the store is made on first use)."""

    embedder: Embedder | None = None
    document_path: str | os.PathLike[str] | None = None
    _document_store: DocumentStore | None = None

    def _docs(self) -> DocumentStore:
        store = self._document_store
        if store is None:
            store = self._document_store = DocumentStore(self.embedder, self.document_path)
        elif self.embedder is not None and store.embedder is not self.embedder:
            store.embedder = self.embedder  # replaced after first use: later calls use the new one
        return store

    def store_document(self, key: str, text: str) -> None:
        """Embed ``text`` and keep it under ``key``.

        Raises:
            DependencyError: the configured embedder's package is not installed.
            InferenceError: the embedding provider failed.
        """
        self._docs().store(key, text)

    def search_documents(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The stored documents nearest ``query``: ``[{"key", "text", "score"}]``, best first."""
        return self._docs().search(query, limit)

    def document_keys(self) -> list[str]:
        """The keys of every stored document."""
        return self._docs().keys()

    def delete_document(self, key: str) -> bool:
        """Forget the document under ``key``; False when there was none."""
        return self._docs().delete(key)
