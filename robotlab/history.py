"""Conversation history tools: term-frequency cosine scoring, compression, search, auto-compaction.

Scoring uses stemmed term-frequency vectors (no IDF) and cosine similarity, with no external
library. ``compress_history`` keeps what is relevant to the recent turns, summarises or drops
the rest; pinned messages (system, tool results, assistant tool-call dispatchers) always stay.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from robotlab.errors import ConfigError
from robotlab.hooks import CompactionHookContext, HookScope

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "HistoryResult",
    "compress_history",
    "cosine",
    "maybe_compact",
    "search_history",
    "term_vector",
]

MIN_TEXT = 20
DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_COMPACT_THRESHOLD = 0.80
_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have in is it its of on or that the this to was were will with "
    "we you i he she they them our your their not no do does did so if then than there what which who how".split()
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ies", "ied", "ed", "ly", "es", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def term_vector(text: str) -> dict[str, float]:
    """The L2-normalised stemmed term-frequency vector of ``text`` (empty for no terms)."""
    counts = Counter(_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOPWORDS)
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


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _pinned(message: dict[str, Any]) -> bool:
    role = message.get("role")
    return role in ("system", "tool") or (role == "assistant" and not _text(message).strip())


def _mean_vector(texts: list[str]) -> dict[str, float]:
    total: Counter[str] = Counter()
    for text in texts:
        total.update(term_vector(text))
    return {term: value / len(texts) for term, value in total.items()} if texts else {}


def compress_history(
    messages: list[dict[str, Any]],
    recent_turns: int = 3,
    keep_threshold: float = 0.6,
    drop_threshold: float = 0.2,
    summarizer: Callable[[str], str] | None = None,
) -> list[dict[str, Any]]:
    """Older messages kept, summarised or dropped by their relevance to the recent turns.

    Raises:
        ConfigError: ``keep_threshold`` is not above ``drop_threshold``.
    """
    if keep_threshold <= drop_threshold:
        raise ConfigError(f"keep_threshold ({keep_threshold}) must be above drop_threshold ({drop_threshold})")
    scorable = [i for i, m in enumerate(messages) if not _pinned(m)]
    recent = set(scorable[-recent_turns * 2:]) if recent_turns > 0 else set()
    older = [i for i in scorable if i not in recent]
    recent_texts = [_text(messages[i]) for i in sorted(recent) if len(_text(messages[i])) >= MIN_TEXT]
    if not older or not recent_texts:
        return list(messages)
    reference = _mean_vector(recent_texts)
    out = []
    for index, message in enumerate(messages):
        if index in older and len(_text(message)) >= MIN_TEXT:
            message = _judge(message, cosine(term_vector(_text(message)), reference),
                             keep_threshold, drop_threshold, summarizer)
        if message is not None:
            out.append(message)
    return out


def _judge(message: dict[str, Any], score: float, keep: float, drop: float,
           summarizer: Callable[[str], str] | None) -> dict[str, Any] | None:
    if score >= keep:
        return message
    if score < drop or summarizer is None:
        return None
    summary = (summarizer(_text(message)) or "").strip()
    return {**message, "content": summary} if summary else None


@dataclass(frozen=True)
class HistoryResult:
    """A message found by ``search_history``."""

    text: str
    role: str
    score: float
    index: int


def search_history(messages: list[dict[str, Any]], query: str, limit: int = 5) -> list[HistoryResult]:
    """Messages of 20+ characters scoring above zero against ``query``, best first."""
    wanted = term_vector(query)
    hits = []
    for index, message in enumerate(messages):
        text = _text(message)
        if len(text) >= MIN_TEXT:
            score = cosine(term_vector(text), wanted)
            if score > 0:
                hits.append(HistoryResult(text, str(message.get("role")), score, index))
    return sorted(hits, key=lambda hit: hit.score, reverse=True)[:limit]


def _context_window(model: str) -> int:
    from robotlab.llm import _litellm

    try:
        info = _litellm().get_model_info(model)
        return int(info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT_WINDOW)
    except Exception:  # unknown to litellm: use the default window
        return DEFAULT_CONTEXT_WINDOW


def maybe_compact(
    robot: Any, history: list[dict[str, Any]], model: str, scope: HookScope
) -> list[dict[str, Any]] | None:
    """Apply ``auto_compact`` before a run's generation; the new history, or None if unchanged.

    ``"context_window"`` compacts when the history's characters / 4 reach ``compact_threshold``
    (default 0.8) of the model's context window; a callable decides for itself on every run
    with a history (returning the new history, or None after changing the robot itself). The
    ``compaction`` hooks wrap it; an ``on_compaction`` handler that sets
    ``ctx.compacted_messages`` replaces the built-in strategy.
    """
    strategy = robot.config.auto_compact
    if not history or strategy in (None, "none"):
        return None
    if strategy == "context_window":
        threshold = robot.config.compact_threshold or DEFAULT_COMPACT_THRESHOLD
        if sum(len(_text(m)) for m in history) / 4 < _context_window(model) * threshold:
            return None
    ctx = CompactionHookContext(robot=robot, messages_before=tuple(history), config=robot.config,
                                strategy="context_window" if strategy == "context_window" else "custom")

    def core() -> list[dict[str, Any]] | None:
        scope.fire("compaction", ctx)
        if not ctx.handled:
            result = strategy(robot) if callable(strategy) else compress_history(history)
            ctx.compacted_messages = result if isinstance(result, list) else None
        return ctx.compacted_messages

    scope.run("compaction", ctx, core)
    return list(ctx.compacted_messages) if ctx.compacted_messages is not None else None
