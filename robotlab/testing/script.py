"""The script format shared by every LLM double: a list of turns, one per model request.

A turn is a dict with one of these shapes::

    {"content": "text"}
    {"content": "optional text",
     "tool_calls": [{"name": "write", "arguments": {...}, "id": "optional"}]}
    {"error": {"status": 429, "message": "slow down"}}

and these optional keys: ``usage`` (``{"prompt_tokens": N, "completion_tokens": M}``, default
10/5; ``null``: the server reports no usage, as many local servers do), ``reasoning_content``
(thinking text), ``chunks`` (how streamed content is split), ``delay`` (seconds to wait before
answering), ``chunk_delay`` (seconds between streamed chunks), ``argument_chunks`` (how many
pieces each tool call's JSON arguments stream in, default 1) and ``finish_reason`` (default
``tool_calls`` or ``stop``; ``length`` plays a reply cut by ``max_tokens``). Read
``docs/testing.md`` next.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigError, InferenceError

__all__ = ["Script", "ScriptedToolCall", "Turn", "load_script", "parse_turns"]

DEFAULT_USAGE = {"prompt_tokens": 10, "completion_tokens": 5}
_TURN_KEYS = frozenset(
    {"content", "tool_calls", "usage", "reasoning_content", "delay", "error", "chunks",
     "chunk_delay", "finish_reason", "argument_chunks", "empty_stream"}
)


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call a scripted turn asks for."""

    name: str
    arguments: dict[str, Any]
    id: str


@dataclass(frozen=True)
class Turn:
    """One scripted model answer (or error)."""

    content: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    prompt_tokens: int = DEFAULT_USAGE["prompt_tokens"]
    completion_tokens: int = DEFAULT_USAGE["completion_tokens"]
    reasoning_content: str | None = None
    delay: float = 0.0
    error_status: int | None = None
    error_message: str = ""
    chunks: tuple[str, ...] = ()
    chunk_delay: float = 0.0
    finish_reason: str | None = None
    argument_chunks: int = 1
    """Pieces each tool call's JSON arguments stream in (providers stream long arguments in
    many)."""
    empty_stream: bool = False
    """Streamed, the reply is HTTP 200 with no chunk at all (llama.cpp's answer to a prompt over
    its context window); not streamed, the turn is answered as usual."""
    reports_usage: bool = True
    """False: the reply carries no usage (a turn with ``"usage": null``)."""

    @property
    def stop_reason(self) -> str:
        """The ``finish_reason`` the model reports: as scripted, else ``tool_calls`` or ``stop``."""
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")

    @property
    def is_error(self) -> bool:
        """True for an ``{"error": ...}`` turn."""
        return self.error_status is not None

    def argument_pieces(self, arguments: str) -> list[str]:
        """A tool call's JSON ``arguments`` cut into ``argument_chunks`` pieces of about one
        length."""
        size = max(-(-len(arguments) // self.argument_chunks), 1)
        return [arguments[start:start + size] for start in range(0, len(arguments), size)] or [""]

    def content_chunks(self) -> list[str]:
        """The pieces streamed for this turn's content (word by word unless ``chunks`` says)."""
        if self.chunks:
            return list(self.chunks)
        if not self.content:
            return []
        words = self.content.split(" ")
        return [w + " " for w in words[:-1]] + [words[-1]]


def _parse_tool_calls(raw: Any, turn_index: int) -> tuple[ScriptedToolCall, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"turn {turn_index}: tool_calls must be a list")
    calls = []
    for i, call in enumerate(raw):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ConfigError(f"turn {turn_index}: tool call {i} needs a string 'name'")
        arguments = call.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        calls.append(
            ScriptedToolCall(call["name"], dict(arguments),
                             str(call.get("id") or f"call_{turn_index}_{i}"))
        )
    return tuple(calls)


def _parse_turn(raw: Any, index: int) -> Turn:
    if not isinstance(raw, dict):
        raise ConfigError(f"turn {index}: expected a mapping, got {type(raw).__name__}")
    unknown = set(raw) - _TURN_KEYS
    if unknown:
        raise ConfigError(f"turn {index}: unknown keys {sorted(unknown)}; "
                          f"known: {sorted(_TURN_KEYS)}")
    usage = {**DEFAULT_USAGE, **(raw.get("usage") or {})}
    error = raw.get("error")
    chunks = tuple(raw.get("chunks") or ())
    content = raw.get("content")
    if chunks and content is None:
        content = "".join(chunks)
    return Turn(
        content=content,
        tool_calls=_parse_tool_calls(raw.get("tool_calls") or [], index),
        prompt_tokens=int(usage["prompt_tokens"]),
        completion_tokens=int(usage["completion_tokens"]),
        reasoning_content=raw.get("reasoning_content"),
        delay=float(raw.get("delay") or 0.0),
        error_status=int(error.get("status", 500)) if isinstance(error, dict) else None,
        error_message=(str(error.get("message", "scripted error")) if isinstance(error, dict)
                       else ""),
        chunks=chunks,
        chunk_delay=float(raw.get("chunk_delay") or 0.0),
        finish_reason=raw.get("finish_reason"),
        argument_chunks=max(int(raw.get("argument_chunks") or 1), 1),
        empty_stream=bool(raw.get("empty_stream")),
        reports_usage=not ("usage" in raw and raw["usage"] is None),
    )


def parse_turns(raw: Any) -> list[Turn]:
    """Validate a script (a list of turn dicts, or ``{"turns": [...]}``) into turns.

    Raises:
        ConfigError: the script is not a list of valid turns.
    """
    if isinstance(raw, dict) and "turns" in raw:
        raw = raw["turns"]
    if not isinstance(raw, list):
        raise ConfigError("a script is a list of turns")
    return [t if isinstance(t, Turn) else _parse_turn(t, i) for i, t in enumerate(raw)]


def load_script(path: str | Path) -> list[Turn]:
    """Load a script from a YAML or JSON file."""
    text = Path(path).read_text(encoding="utf-8")
    if str(path).endswith(".json"):
        return parse_turns(json.loads(text))
    import yaml

    return parse_turns(yaml.safe_load(text))


@dataclass
class Script:
    """A thread-safe queue of turns; each request takes the next one."""

    turns: list[Turn]
    consumed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, raw: Any) -> Script:
        """Build a script from turn dicts, Turn objects, or ``{"turns": [...]}``."""
        return cls(parse_turns(raw))

    def next_turn(self) -> Turn:
        """Take the next turn.

        Raises:
            InferenceError: the script is exhausted.
        """
        with self._lock:
            if self.consumed >= len(self.turns):
                raise InferenceError(
                    f"script exhausted: all {len(self.turns)} scripted turns were already used"
                )
            turn = self.turns[self.consumed]
            self.consumed += 1
            return turn

    @property
    def remaining(self) -> int:
        """How many turns are left."""
        with self._lock:
            return len(self.turns) - self.consumed
