"""The entries of a conversation log, frozen, one per step, and the chat messages they render to.

Kinds: ``system`` (the system message a run started with), ``task`` (the user message),
``reply`` (one model answer and its usage), ``tool_call`` (one call that reply asked for),
``tool_result``, ``exit`` (how a run ended: ``completed``, ``failed`` or ``interrupted``) and
``rewrite`` (a transcript replacing everything before it). :func:`render` turns entries into
chat messages: the last rewrite's messages, then every later entry of a run that did not fail
(a reply and the tool calls after it form one assistant message). ``log.py`` keeps them and
saves them.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from robotlab.errors import ConfigError

__all__ = [
    "COMPLETED",
    "FAILED",
    "INTERRUPTED",
    "KINDS",
    "Entry",
    "ExitEntry",
    "ReplyEntry",
    "RewriteEntry",
    "SystemEntry",
    "TaskEntry",
    "ToolCallEntry",
    "ToolResultEntry",
    "entry_from_dict",
    "exit_status",
    "render",
]

COMPLETED, FAILED, INTERRUPTED = "completed", "failed", "interrupted"


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One step of the conversation: which run it belongs to (None outside runs) and when."""

    kind: ClassVar[str] = ""
    run: int | None = None
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, with ``kind`` first."""
        return {"kind": self.kind, **dataclasses.asdict(self)}

    def message(self) -> dict[str, Any] | None:
        """The chat message this entry renders to, if any."""
        return None


@dataclass(frozen=True, kw_only=True)
class SystemEntry(Entry):
    """The system message a run started with."""

    kind: ClassVar[str] = "system"
    content: str


@dataclass(frozen=True, kw_only=True)
class TaskEntry(Entry):
    """The user message of a run (with any learnings prepended, as the model read it)."""

    kind: ClassVar[str] = "task"
    content: Any

    def message(self) -> dict[str, Any]:
        """A user message."""
        return {"role": "user", "content": self.content}


@dataclass(frozen=True, kw_only=True)
class ReplyEntry(Entry):
    """One model answer; its tool calls follow as ``ToolCallEntry``s."""

    kind: ClassVar[str] = "reply"
    content: str | None = None
    reasoning: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    def message(self) -> dict[str, Any]:
        """An assistant message (the tool calls are attached while rendering)."""
        return {"role": "assistant", "content": self.content or ""}


@dataclass(frozen=True, kw_only=True)
class ToolCallEntry(Entry):
    """A tool call the reply before it asked for, recorded before the tool runs."""

    kind: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def call_message(self) -> dict[str, Any]:
        """The OpenAI-format ``tool_calls`` item."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }


@dataclass(frozen=True, kw_only=True)
class ToolResultEntry(Entry):
    """What a tool returned (or the error text the model reads)."""

    kind: ClassVar[str] = "tool_result"
    id: str
    name: str
    content: str

    def message(self) -> dict[str, Any]:
        """A tool message answering the call with the same id."""
        return {"role": "tool", "tool_call_id": self.id, "name": self.name, "content": self.content}


@dataclass(frozen=True, kw_only=True)
class ExitEntry(Entry):
    """How a run ended; a run that did not complete is left out of the rendered messages."""

    kind: ClassVar[str] = "exit"
    status: str
    reply: str | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class RewriteEntry(Entry):
    """Chat messages that replace the whole transcript before this entry."""

    kind: ClassVar[str] = "rewrite"
    reason: str
    messages: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the messages as a list)."""
        return {**super().to_dict(), "messages": [dict(m) for m in self.messages]}


KINDS: dict[str, type[Entry]] = {
    "system": SystemEntry,
    "task": TaskEntry,
    "reply": ReplyEntry,
    "tool_call": ToolCallEntry,
    "tool_result": ToolResultEntry,
    "exit": ExitEntry,
    "rewrite": RewriteEntry,
}


_TEXT, _MAYBE_TEXT, _NUMBER = (str,), (str, type(None)), (int, float)
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "run": (int, type(None)), "at": _NUMBER, "reasoning": _MAYBE_TEXT, "model": _MAYBE_TEXT,
    "input_tokens": (int,), "output_tokens": (int,), "cost": _NUMBER, "id": _TEXT, "name": _TEXT,
    "arguments": (dict,), "status": _TEXT, "reply": _MAYBE_TEXT, "error": _MAYBE_TEXT,
    "reason": _TEXT, "messages": (list, tuple),
}
"""The JSON types a saved entry's fields may hold (``content`` depends on the kind: see
:data:`CONTENT_TYPES`); a file whose entries hold others was not written by a robot."""
CONTENT_TYPES: dict[str, tuple[type, ...]] = {
    "system": _TEXT, "reply": _MAYBE_TEXT, "tool_result": _TEXT,
}
"""``content``'s types by kind; a task's may be anything a user message holds (text, parts)."""


def entry_from_dict(data: Any) -> Entry:
    """Rebuild an entry from ``Entry.to_dict`` output.

    Raises:
        ConfigError: not a dict, an unknown kind or field, or a field of the wrong type.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"a history entry is a JSON object, not {type(data).__name__}")
    values = dict(data)
    cls = KINDS.get(str(values.pop("kind", "")))
    if cls is None:
        raise ConfigError(
            f"unknown history entry kind {data.get('kind')!r}; known: {', '.join(KINDS)}"
        )
    for name, value in values.items():
        types = CONTENT_TYPES.get(cls.kind) if name == "content" else FIELD_TYPES.get(name)
        if types and (not isinstance(value, types) or isinstance(value, bool)):  # JSON's true
            # is no run number, count or time
            raise ConfigError(f"bad {cls.kind} history entry: {name} is {type(value).__name__}")
    if cls is RewriteEntry:
        values["messages"] = tuple(values.get("messages") or ())
        if not all(isinstance(message, dict) for message in values["messages"]):
            raise ConfigError("bad rewrite history entry: a message is not a JSON object")
    try:
        return cls(**values)
    except TypeError as exc:
        raise ConfigError(f"bad {cls.kind} history entry: {exc}") from exc


def render(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The chat messages of ``entries``: after the last rewrite, runs that did not fail."""
    entries = list(entries)
    start = max((i for i, e in enumerate(entries) if isinstance(e, RewriteEntry)), default=-1)
    messages = [dict(m) for m in entries[start].messages] if start >= 0 else []  # type: ignore[attr-defined]
    dropped = {e.run for e in entries if isinstance(e, ExitEntry) and e.status != COMPLETED}
    reply: ReplyEntry | None = None
    for entry in entries[start + 1 :]:
        if entry.run is not None and entry.run in dropped:
            continue
        if isinstance(entry, ToolCallEntry) and reply is not None:
            assistant = messages[-1]
            if "tool_calls" not in assistant:
                assistant["content"] = reply.content
            assistant.setdefault("tool_calls", []).append(entry.call_message())
            continue
        message = entry.message()
        if message is not None:
            messages.append(message)
            reply = entry if isinstance(entry, ReplyEntry) else None
    return messages


def exit_status(error: BaseException | None) -> str:
    """``completed`` without an error, ``failed`` for an ``Exception``, else ``interrupted``."""
    if error is None:
        return COMPLETED
    return FAILED if isinstance(error, Exception) else INTERRUPTED
