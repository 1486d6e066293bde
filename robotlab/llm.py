"""The LLM seam: one round trip to a model, and its litellm implementation.

A robot never talks to a provider except through an object with the ``LLM`` protocol's one
method, ``complete``. ``LiteLLM`` is the default; ``robotlab.testing.ScriptedLLM`` is the fake.
litellm is imported on first use only (it costs seconds and ~200 MB), with its price table read
from the installed package so it never reaches for the network.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from robotlab.errors import DependencyError, InferenceError

__all__ = ["LLM", "LLMReply", "LiteLLM", "LiteLLMEmbedder", "StreamTap", "ToolCall", "Usage", "is_priced", "model_id",
           "price"]

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
    """Tokens one round trip used.

    .. versionchanged:: 0.2
       ``estimated``.
    """

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
    """Why the model stopped: ``stop``, ``tool_calls``, or ``length`` when ``max_tokens`` cut the reply."""

    @property
    def truncated(self) -> bool:
        """True when the reply was cut by the output-token limit (``finish_reason`` ``length``)."""
        return self.finish_reason == "length"


class LLM(Protocol):
    """Anything that answers one chat request: the seam robots use for every model call."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        on_chunk: ChunkCallback | None = None,
    ) -> LLMReply:
        """Send OpenAI-format ``messages`` and tool schemas; stream text to ``on_chunk`` if given
        (and tool-call argument deltas too, when it is a :class:`StreamTap`).

        ``params`` holds ``model`` (litellm id, provider prefix included) and optional
        ``api_base``, ``api_key``, ``temperature``, ``top_p``, ``top_k``, ``max_tokens``,
        ``presence_penalty``, ``frequency_penalty``, ``stop``.

        Raises:
            InferenceError: the provider failed; the message is the provider's.
        """
        ...


def model_id(model: str, provider: str | None) -> str:
    """The litellm model id: ``provider/model`` unless the model already names its provider."""
    if not provider or model.startswith(f"{provider}/"):
        return model
    return f"{provider}/{model}"


def _litellm() -> Any:
    from robotlab.config.cascade import prepare_litellm_environment

    prepare_litellm_environment()
    import litellm

    litellm.suppress_debug_info = True
    return litellm


_unpriced: set[str] = set()


def price(model: str, input_tokens: int, output_tokens: int) -> float:
    """Dollar cost from litellm's price table; 0.0 for unknown models, never an exception."""
    if model in _unpriced:
        return 0.0
    try:
        prompt, completion = _litellm().cost_per_token(
            model=model, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )
        return float(prompt + completion)
    except Exception:  # litellm raises many types for "no price"; remember, the lookup is slow
        _unpriced.add(model)
        return 0.0


def is_priced(model: str) -> bool:
    """True when litellm's price table knows ``model``: a cost of 0.0 for it is a real zero."""
    price(model, 0, 0)
    return model not in _unpriced


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": value}


def _as_reported(usage: Usage | None) -> Usage:
    """``usage``; or, when the provider sent none (absent, or 0 tokens in all), 0 marked ``estimated``.

    A provider's count is never 0: even an empty reply had a prompt.
    """
    if usage is None or not (usage.input_tokens or usage.output_tokens):
        return Usage(estimated=True)
    return usage


class _StreamAssembler:
    """Adds up streamed deltas into one reply."""

    def __init__(self, on_chunk: ChunkCallback) -> None:
        self.on_chunk = on_chunk
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Usage | None = None
        self.model: str | None = None
        self.finish_reason: str | None = None

    def add(self, chunk: Any) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage:
            self.usage = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)
        for choice in getattr(chunk, "choices", None) or []:
            self.finish_reason = getattr(choice, "finish_reason", None) or self.finish_reason
            self._add_delta(choice.delta)

    def _add_delta(self, delta: Any) -> None:
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


def _reply_from_response(response: Any) -> LLMReply:
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
        usage=_as_reported(Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage else None),
        model=getattr(response, "model", None),
        finish_reason=getattr(choice, "finish_reason", None),
    )


class LiteLLM:
    """The default LLM: one ``litellm.completion`` call per round trip.

    Args:
        max_retries: retries the provider client makes on its own (None: litellm's default).
        timeout: seconds before a request is abandoned (None: litellm's default).
    """

    def __init__(self, *, max_retries: int | None = None, timeout: float | None = None) -> None:
        self.max_retries = max_retries
        self.timeout = timeout

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        on_chunk: ChunkCallback | None = None,
    ) -> LLMReply:
        """One round trip through litellm; see ``LLM.complete``."""
        litellm = _litellm()
        kwargs = self._request(messages, tools, params, streaming=on_chunk is not None)
        try:
            response = litellm.completion(**kwargs)
            if on_chunk is None:
                reply = _reply_from_response(response)
                known_cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
            else:
                known_cost = None
                assembler = _StreamAssembler(on_chunk)
                for chunk in response:
                    assembler.add(chunk)
                reply = assembler.reply()
        except InferenceError:
            raise
        except Exception as exc:  # the one boundary where provider failures become ours
            raise _inference_error(exc, kwargs["model"]) from exc
        cost = known_cost if known_cost is not None else price(
            kwargs["model"], reply.usage.input_tokens, reply.usage.output_tokens
        )
        return dataclasses.replace(reply, cost=cost)

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any], *, streaming: bool
    ) -> dict[str, Any]:
        kwargs = {k: v for k, v in params.items() if v is not None}
        kwargs["messages"] = messages
        if tools:
            kwargs["tools"] = tools
        if self.max_retries is not None:
            kwargs["max_retries"] = self.max_retries
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        if streaming:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs


def _inference_error(exc: Exception, model: str) -> InferenceError:
    message = getattr(exc, "message", None) or str(exc)
    status = getattr(exc, "status_code", None)
    error = InferenceError(f"{model}: {message}" if status is None else f"{model}: [{status}] {message}")
    error.status_code = status
    return error


class LiteLLMEmbedder:
    """Document embeddings from a provider's embedding model, through ``litellm.embedding``.

    An ``Embedder`` for ``Memory(embedder=...)`` (``robotlab/memory/documents.py``).

    Args:
        model: litellm model id (``text-embedding-3-small``, ``openai/bge-small`` on a local
            OpenAI-compatible server...).
        api_base, api_key: for local or OpenAI-compatible servers.
        passage_prefix, query_prefix: prepended to stored texts and to queries, for models
            trained with them (``"passage: "`` and ``"query: "`` for e5 and bge).
    """

    def __init__(self, model: str, *, api_base: str | None = None, api_key: str | None = None,
                 passage_prefix: str = "", query_prefix: str = "") -> None:
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.prefixes = {"passage": passage_prefix, "query": query_prefix}

    def embed(self, texts: list[str], kind: str) -> list[list[float]]:
        """One dense vector per text.

        Raises:
            DependencyError: litellm is not installed.
            InferenceError: the provider failed.
        """
        try:
            litellm = _litellm()
        except ImportError as exc:
            raise DependencyError("embeddings through a model need litellm: pip install litellm, "
                                  "or leave the embedder unset to use the local one") from exc
        prefix = self.prefixes.get(kind, "")
        kwargs = {"api_base": self.api_base, "api_key": self.api_key}
        try:
            response = litellm.embedding(model=self.model, input=[prefix + t for t in texts],
                                         **{k: v for k, v in kwargs.items() if v is not None})
        except Exception as exc:  # provider failures become ours, as in LiteLLM.complete
            raise _inference_error(exc, self.model) from exc
        rows = sorted(response.data, key=lambda row: row["index"])
        return [list(row["embedding"]) for row in rows]
