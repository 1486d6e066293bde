"""The in-process scripted model: an ``LLM`` that answers from a script and records requests."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from robotlab.errors import InferenceError
from robotlab.errors.causes import EMPTY_STREAM, Cause, classify
from robotlab.llm import ChunkCallback, LLMReply, StreamTap, ToolCall, Usage
from robotlab.testing.script import Script

__all__ = ["RecordedRequest", "ScriptedLLM"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the scripted model received."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    params: dict[str, Any]
    streamed: bool

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered with this request, in order."""
        return [t["function"]["name"] for t in self.tools]

    @property
    def system(self) -> str | None:
        """The system message's text, if any."""
        return next((m["content"] for m in self.messages if m["role"] == "system"), None)

    @property
    def last_user(self) -> str | None:
        """The last user message's text, if any."""
        return next((m["content"] for m in reversed(self.messages) if m["role"] == "user"), None)

    def tool_results(self) -> list[str]:
        """The tool results sent back in this request, in order."""
        return [m["content"] for m in self.messages if m["role"] == "tool"]


class ScriptedLLM:
    """An ``LLM`` whose answers come from a script (see ``robotlab.testing.script``).

    Args:
        replies: the turns, as dicts in the script format (or a loaded script).

    Each ``complete`` call takes the next turn; an exhausted script raises ``InferenceError``
    saying so. ``requests`` records every call.
    """

    def __init__(self, replies: Any) -> None:
        self.script = Script.of(replies)
        self.requests: list[RecordedRequest] = []

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        on_chunk: ChunkCallback | None = None,
    ) -> LLMReply:
        """Answer with the next scripted turn; see ``robotlab.llm.LLM.complete``."""
        self.requests.append(
            RecordedRequest([dict(m) for m in messages], list(tools), dict(params),
                            on_chunk is not None)
        )
        turn = self.script.next_turn()
        if turn.delay:
            time.sleep(turn.delay)
        if turn.is_error:
            # Classified as the real client classifies a provider's error, so loops see one cause.
            error = InferenceError(f"[{turn.error_status}] {turn.error_message}",
                                   cause=classify("", turn.error_status, turn.error_message))
            error.status_code = turn.error_status
            raise error
        if turn.empty_stream and on_chunk is not None:
            raise InferenceError(EMPTY_STREAM, cause=Cause.CONTEXT_WINDOW)
        if on_chunk is not None:
            for piece in turn.content_chunks():
                on_chunk(piece)
                if turn.chunk_delay:
                    time.sleep(turn.chunk_delay)
            # a tap also hears the calls' arguments, as from a provider
            if isinstance(on_chunk, StreamTap):
                for call in turn.tool_calls:
                    for piece in turn.argument_pieces(json.dumps(call.arguments)):
                        on_chunk.arguments(piece)
        return LLMReply(
            content=turn.content,
            tool_calls=tuple(ToolCall(c.id, c.name, dict(c.arguments)) for c in turn.tool_calls),
            reasoning=turn.reasoning_content,
            usage=(Usage(turn.prompt_tokens, turn.completion_tokens) if turn.reports_usage
                   else Usage(estimated=True)),
            cost=0.0,
            model=params.get("model"),
            finish_reason=turn.stop_reason,
        )

    @property
    def remaining(self) -> int:
        """Turns not yet used."""
        return self.script.remaining
