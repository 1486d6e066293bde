"""What one model call returns, and how a provider's reply (whole or streamed) becomes it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChunkCallback", "LLMReply", "StreamAssembler", "StreamTap", "ToolCall", "Usage",
           "reply_from_response"]

ChunkCallback = Callable[[str], None]


class StreamTap:
    """An ``on_chunk`` that also hears each streamed tool-call argument delta.

    A plain ``on_chunk`` gets the reply's text only (what a person reads). A meter that counts
    a reply as it streams must also count the arguments of a long tool call (a ``write``
    call's whole file), or its count stands still until the call ends.
    """

    def __init__(self, on_text: ChunkCallback, on_arguments: ChunkCallback) -> None:
        self.on_text = on_text
        self.on_arguments = on_arguments

    def __call__(self, chunk: str) -> None:
        """One streamed piece of the reply's text."""
        self.on_text(chunk)

    def arguments(self, delta: str) -> None:
        """One streamed piece of a tool call's JSON arguments."""
        self.on_arguments(delta)


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any]

    def to_message(self) -> dict[str, Any]:
        """The OpenAI-format ``tool_calls`` entry for the assistant message."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }


@dataclass(frozen=True)
class Usage:
    """Tokens one round trip used."""

    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    """True when the provider reported no usage: the counts are litellm's own estimate (or 0)."""


@dataclass(frozen=True)
class LLMReply:
    """What one round trip returned."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    model: str | None = None
    finish_reason: str | None = None
    """Why the model stopped: ``stop``, ``tool_calls``, or ``length`` when ``max_tokens`` cut the
    reply."""

    @property
    def truncated(self) -> bool:
        """True when the reply was cut by the output-token limit (``finish_reason`` ``length``)."""
        return self.finish_reason == "length"


def _as_reported(usage: Usage | None) -> Usage:
    """``usage``; or, when the provider sent none, 0 marked ``estimated``.

    None means absent, or 0 tokens in all.

    A provider's count is never 0: even an empty reply had a prompt.
    """
    if usage is None or not (usage.input_tokens or usage.output_tokens):
        return Usage(estimated=True)
    return usage


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": value}


class StreamAssembler:
    """Adds up streamed deltas into one reply (``reply()``)."""

    def __init__(self, on_chunk: ChunkCallback) -> None:
        self.on_chunk = on_chunk
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Usage | None = None
        self.model: str | None = None
        self.finish_reason: str | None = None
        self.heard = False

    def add(self, chunk: Any) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage:
            self.usage = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)
            self.heard = True
        for choice in getattr(chunk, "choices", None) or []:
            self.finish_reason = getattr(choice, "finish_reason", None) or self.finish_reason
            self._add_delta(choice.delta)

    def _add_delta(self, delta: Any) -> None:
        if getattr(delta, "role", None):
            self.heard = True
        if getattr(delta, "reasoning_content", None):
            self.reasoning.append(delta.reasoning_content)
        if delta.content:
            self.text.append(delta.content)
            self.on_chunk(delta.content)
        for call in getattr(delta, "tool_calls", None) or []:
            entry = self.calls.setdefault(call.index or 0, {"id": None, "name": "", "args": ""})
            entry["id"] = call.id or entry["id"]
            if call.function is not None:
                entry["name"] += call.function.name or ""
                entry["args"] += call.function.arguments or ""
                if call.function.arguments and isinstance(self.on_chunk, StreamTap):
                    self.on_chunk.arguments(call.function.arguments)

    @property
    def empty(self) -> bool:
        """True when the provider sent nothing: no role, text, tool call or usage. (litellm ends
        every stream with a finish reason of its own, so that cannot tell; a real reply, even an
        empty one, opens with the assistant's role.)"""
        return not (self.heard or self.text or self.calls or self.reasoning)

    def reply(self) -> LLMReply:
        calls = tuple(
            ToolCall(c["id"] or f"call_{i}", c["name"], _parse_arguments(c["args"]))
            for i, c in sorted(self.calls.items())
        )
        return LLMReply(
            content="".join(self.text) or None,
            tool_calls=calls,
            reasoning="".join(self.reasoning) or None,
            usage=_as_reported(self.usage),
            model=self.model,
            finish_reason=self.finish_reason,
        )


def reply_from_response(response: Any) -> LLMReply:
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(c.id, c.function.name, _parse_arguments(c.function.arguments))
        for c in (message.tool_calls or [])
    )
    usage = getattr(response, "usage", None)
    return LLMReply(
        content=message.content or None,
        tool_calls=calls,
        reasoning=getattr(message, "reasoning_content", None) or None,
        usage=_as_reported(Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)
                           if usage else None),
        model=getattr(response, "model", None),
        finish_reason=getattr(choice, "finish_reason", None),
    )
