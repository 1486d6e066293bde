"""The document store: texts kept under keys and found again by meaning (spec 18).

``memory.store_document(key, text)`` embeds the text; ``search_documents(query, limit=5)``
embeds the query and returns ``[{"key", "text", "score"}]``, best first, by cosine.

Embeddings come from the memory's ``embedder``: any object with
``embed(texts, kind) -> list[vector]`` (``kind`` is ``"passage"`` or ``"query"``; a vector is a
list of floats, or a sparse ``{term: weight}`` dict). ``robotlab.llm.LiteLLMEmbedder`` calls a
provider's embedding model through litellm; without one, ``LocalEmbedder`` is used: stemmed
term-frequency vectors (``robotlab.text``), which need no network, no download and no model,
and match words rather than meaning.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from robotlab.text.similarity import cosine, term_vector

__all__ = ["DocumentMethods", "DocumentStore", "Embedder", "LocalEmbedder"]

Vector = Sequence[float] | dict[str, float]


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


def _score(a: Vector, b: Vector) -> float:
    if isinstance(a, dict) or isinstance(b, dict):
        return cosine(dict(a), dict(b)) if isinstance(a, dict) and isinstance(b, dict) else 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class DocumentStore:
    """Texts and their vectors, by key (thread-safe)."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder: Embedder = embedder or LocalEmbedder()
        self._lock = threading.Lock()
        self._documents: dict[str, tuple[str, Vector]] = {}

    def store(self, key: str, text: str) -> None:
        """Keep ``text`` under ``key`` (replacing what was there)."""
        [vector] = self.embedder.embed([str(text)], "passage")
        with self._lock:
            self._documents[str(key)] = (str(text), vector)

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The ``limit`` best matches for ``query``: ``{"key", "text", "score"}``, best first."""
        [wanted] = self.embedder.embed([str(query)], "query")
        with self._lock:
            items = list(self._documents.items())
        scored: list[dict[str, Any]] = [{"key": key, "text": text, "score": _score(wanted, vector)} for key, (text, vector) in items]
        scored.sort(key=lambda hit: -hit["score"])
        return scored[: max(int(limit), 0)]

    def keys(self) -> list[str]:
        """Every stored key, in storing order."""
        with self._lock:
            return list(self._documents)

    def delete(self, key: str) -> bool:
        """Forget ``key``; False when it was not there."""
        with self._lock:
            return self._documents.pop(str(key), None) is not None


class DocumentMethods:
    """The document-store methods of ``Memory`` (the store is made on first use)."""

    embedder: Embedder | None = None
    _document_store: DocumentStore | None = None

    def _docs(self) -> DocumentStore:
        if self._document_store is None:
            self._document_store = DocumentStore(self.embedder)
        return self._document_store

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
