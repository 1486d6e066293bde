"""Convergence: have two texts (say, two successive drafts) stopped changing?

``similarity`` is the stemmed term-frequency cosine of ``robotlab.text``; texts shorter than
30 characters (after stripping) score 0.0, since too few words make the cosine meaningless.
"""

from __future__ import annotations

from robotlab.text.similarity import cosine, term_vector

__all__ = ["DEFAULT_THRESHOLD", "MIN_LENGTH", "detected", "similarity"]

MIN_LENGTH = 30
DEFAULT_THRESHOLD = 0.85


def similarity(a: str, b: str) -> float:
    """Cosine of the stemmed term-frequency vectors, 0.0 when either text is under 30 characters."""
    a, b = (a or "").strip(), (b or "").strip()
    if len(a) < MIN_LENGTH or len(b) < MIN_LENGTH:
        return 0.0
    return cosine(term_vector(a), term_vector(b))


def detected(a: str, b: str, threshold: float = DEFAULT_THRESHOLD) -> bool:
    """True when ``similarity(a, b)`` reaches ``threshold``.

    Raises:
        ValueError: ``threshold`` is outside [0, 1].
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
    return similarity(a, b) >= threshold
