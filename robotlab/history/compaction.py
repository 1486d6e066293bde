"""Conversation history tools: compression, search and auto-compaction.

Relevance is the term-frequency cosine of ``robotlab.text.similarity``. ``compress_history``
keeps what is relevant to the recent turns, summarises or drops the rest; pinned messages
(system, tool results, assistant tool-call dispatchers) always stay.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from robotlab.errors import ConfigError
from robotlab.hooks.hooks import CompactionHookContext, HookScope
from robotlab.text.similarity import cosine, term_vector

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "HistoryResult",
    "compress_history",
    "maybe_compact",
    "search_history",
]

MIN_TEXT = 20
DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_COMPACT_THRESHOLD = 0.80
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
        raise ConfigError(f"keep_threshold ({keep_threshold}) must be above "
                          f"drop_threshold ({drop_threshold})")
    scorable = [i for i, m in enumerate(messages) if not _pinned(m)]
    recent = set(scorable[-recent_turns * 2:]) if recent_turns > 0 else set()
    older = [i for i in scorable if i not in recent]
    recent_texts = [_text(messages[i]) for i in sorted(recent)
                    if len(_text(messages[i])) >= MIN_TEXT]
    if not older or not recent_texts:
        return list(messages)
    reference = _mean_vector(recent_texts)
    out = []
    for index, message in enumerate(messages):
        kept: dict[str, Any] | None = message
        if index in older and len(_text(message)) >= MIN_TEXT:
            kept = _judge(message, cosine(term_vector(_text(message)), reference),
                          keep_threshold, drop_threshold, summarizer)
        if kept is not None:
            out.append(kept)
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


def search_history(messages: list[dict[str, Any]], query: str,
                   limit: int = 5) -> list[HistoryResult]:
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
    hook_strategy = "context_window" if strategy == "context_window" else "custom"
    ctx = CompactionHookContext(robot=robot, messages_before=tuple(history), config=robot.config,
                                strategy=hook_strategy)

    def core() -> list[dict[str, Any]] | None:
        scope.fire("compaction", ctx)
        if not ctx.handled:
            result = strategy(robot) if callable(strategy) else compress_history(history)
            ctx.compacted_messages = result if isinstance(result, list) else None
        return ctx.compacted_messages

    scope.run("compaction", ctx, core)
    return list(ctx.compacted_messages) if ctx.compacted_messages is not None else None
