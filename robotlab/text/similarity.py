"""Text similarity without external libraries: stemmed term-frequency vectors and their cosine.

History search and compaction, and MCP server selection, rank text with it; no IDF, so a score
depends only on the two texts compared.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["cosine", "term_vector"]

_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have in is it its of on or that the this to was "
    "were will with we you i he she they them our your their not no do does did so if then than "
    "there what which who how".split()
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ies", "ied", "ed", "ly", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def term_vector(text: str) -> dict[str, float]:
    """The L2-normalised stemmed term-frequency vector of ``text`` (empty for no terms)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    counts = Counter(_stem(w) for w in words if w not in _STOPWORDS)
    norm = math.sqrt(sum(c * c for c in counts.values()))
    return {term: count / norm for term, count in counts.items()} if norm else {}


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    """Cosine similarity of two term vectors."""
    if not a or not b:
        return 0.0
    dot = sum(value * b.get(term, 0.0) for term, value in a.items())
    norm_a = math.sqrt(sum(v * v for v in a.values()))
    norm_b = math.sqrt(sum(v * v for v in b.values()))
    return dot / (norm_a * norm_b) if norm_a and norm_b else 0.0


