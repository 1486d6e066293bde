"""The LLM seam: one round trip to a model, and its litellm implementation.

A robot never talks to a provider except through an object with the ``LLM`` protocol's one
method, ``complete``. ``LiteLLM`` is the default; ``robotlab.testing.ScriptedLLM`` is the fake.
litellm is imported on first use only (it costs seconds and ~200 MB), with its price table read
from the installed package so it never reaches for the network.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, Protocol

from robotlab.config.model_settings import qualify
from robotlab.errors import DependencyError, InferenceError
from robotlab.errors.causes import EMPTY_STREAM, Cause, classify_exception
from robotlab.inference import deadline, pace
from robotlab.inference.bounded import CallTimedOut, bounded_items
from robotlab.inference.provider import is_priced, load_client, missing_credentials, price
from robotlab.inference.provider import litellm_module as _litellm
from robotlab.inference.reply import (
    ChunkCallback,
    LLMReply,
    StreamAssembler,
    StreamTap,
    ToolCall,
    Usage,
    reply_from_response,
)

__all__ = ["LLM", "ChunkCallback", "LLMReply", "LiteLLM", "LiteLLMEmbedder", "StreamTap",
           "ToolCall", "Usage", "is_priced", "load_client", "missing_credentials", "model_id",
           "price"]

RetryReport = Callable[[dict[str, Any]], None]

DEFAULT_RETRIES = 3
"""Retries of a transient failure when the caller names no number."""
FIRST_WAIT = 0.5
"""Seconds before the first retry when the caller names none (``ruby_llm.retry_interval``)."""
BACKOFF_FACTOR = 2.0
"""How much longer each later wait is when the caller names none (``retry_backoff_factor``)."""
MIN_TRY = 1.0
"""A retry is made only when at least this many seconds would be left for it after its wait."""


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


model_id = qualify
"""The litellm model id: ``provider/model`` unless the model already names its provider (made in
one place, :func:`robotlab.config.model_settings.qualify`)."""


class LiteLLM:
    """The default LLM: ``litellm.completion`` calls held to one deadline, retried inside it.

    Each call, its retries included, ends by its deadline: the sooner of ``timeout`` seconds
    (or one sized from the output cap and the measured token rate, see
    ``robotlab.inference.pace``), ``params["timeout"]``, and the deadline the caller set with
    ``robotlab.inference.deadline.within`` (robotd sets a bus message's). Failures are
    classified once (``robotlab.errors.causes``): permanent ones (a context overflow, a
    refused key, an unknown model, a bad request) are never sent again unchanged; transient
    ones are retried with a short backoff while time is left. The provider client itself never
    retries, so a call cannot silently take several of its time-outs.

    Args:
        max_retries: retries of transient failures inside the deadline (None: 3).
        retry_interval: seconds before the first retry (None: 0.5).
        backoff_factor: each later wait is this many times the one before (None: 2).
        timeout: seconds one call may take, its retries included (None: sized per call).
        on_retry: told of each retry before its wait (``model:retry`` events: attempt, of,
            wait, deadline_left, cause).
    """

    def __init__(self, *, max_retries: int | None = None, timeout: float | None = None,
                 on_retry: RetryReport | None = None, retry_interval: float | None = None,
                 backoff_factor: float | None = None) -> None:
        self.max_retries = DEFAULT_RETRIES if max_retries is None else max(max_retries, 0)
        self.retry_interval = FIRST_WAIT if retry_interval is None else max(retry_interval, 0.0)
        self.backoff_factor = BACKOFF_FACTOR if backoff_factor is None else max(backoff_factor, 1.0)
        self.timeout = timeout
        self.on_retry = on_retry

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        on_chunk: ChunkCallback | None = None,
    ) -> LLMReply:
        """One model call, retried inside its deadline; see ``LLM.complete``.

        Raises:
            InferenceError: with ``cause`` set; a time-out names the deadline it kept.
        """
        kwargs = self._request(messages, tools, params, streaming=on_chunk is not None)
        seconds = (params.get("timeout") or self.timeout
                   or pace.sized_timeout(kwargs["model"], kwargs.get("max_tokens")))
        _litellm()  # a cold import takes seconds: the deadline is the model's, so it starts after
        at = time.monotonic() + seconds
        outer = deadline.ambient()
        bound = f"its {seconds:g}s time-out"
        if outer is not None and outer < at:
            away = max(outer - time.monotonic(), 0)
            at, bound = outer, f"the caller's deadline ({away:.1f}s away when it began)"
        attempt = 0
        while True:
            heard = _Heard(on_chunk)
            try:
                return self._once(kwargs, at, bound, heard if on_chunk is not None else None)
            except InferenceError as exc:
                wait = self.retry_interval * self.backoff_factor**attempt
                left = at - time.monotonic()
                # A streamed reply already shown in part cannot be taken back, so it is not retried.
                if (exc.permanent or attempt >= self.max_retries or heard.any
                        or left < wait + MIN_TRY):
                    raise
                attempt += 1
                if self.on_retry is not None:
                    self.on_retry({"event": "model:retry", "attempt": attempt,
                                   "of": self.max_retries, "wait": round(wait, 2),
                                   "deadline_left": round(left, 1), "cause": exc.cause})
                time.sleep(wait)

    def _once(self, kwargs: dict[str, Any], at: float, bound: str,
              on_chunk: ChunkCallback | None) -> LLMReply:
        litellm = _litellm()
        started = time.monotonic()
        # The HTTP client's own time-out is only a backstop for the abandoned worker thread.
        request = {**kwargs, "timeout": max(at - started, 0.1) + 1.0}
        try:
            items = bounded_items(lambda: litellm.completion(**request), at,
                                  streaming=on_chunk is not None)
            if on_chunk is None:
                response = next(items)
                reply = reply_from_response(response)
                known_cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
            else:
                known_cost = None
                assembler = StreamAssembler(on_chunk)
                for chunk in items:
                    assembler.add(chunk)
                reply = assembler.reply()
                if assembler.empty:
                    raise InferenceError(f"{kwargs['model']}: {EMPTY_STREAM}",
                                         cause=Cause.CONTEXT_WINDOW)
        except InferenceError:
            raise
        except CallTimedOut:
            raise InferenceError(f"{kwargs['model']}: the model call timed out: no reply within "
                                 f"{bound}", cause=Cause.TIMEOUT) from None
        except Exception as exc:  # the one boundary where provider failures become ours
            error = _inference_error(exc, kwargs["model"])
            if error.cause == Cause.AUTH and not kwargs.get("api_key"):
                error = _naming_missing_keys(error, kwargs["model"], kwargs.get("api_base"))
            raise error from exc
        pace.record(kwargs["model"], reply.usage.output_tokens, time.monotonic() - started)
        cost = known_cost if known_cost is not None else price(
            kwargs["model"], reply.usage.input_tokens, reply.usage.output_tokens
        )
        return dataclasses.replace(reply, cost=cost)

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any],
        *, streaming: bool
    ) -> dict[str, Any]:
        kwargs = {k: v for k, v in params.items() if v is not None and k != "timeout"}
        kwargs["messages"] = messages
        kwargs["max_retries"] = 0
        if tools:
            kwargs["tools"] = tools
        if streaming:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs


class _Heard(StreamTap):
    """An ``on_chunk`` (a ``StreamTap``'s argument deltas included) that remembers whether
    anything reached the listener."""

    def __init__(self, on_chunk: ChunkCallback | None) -> None:
        self.any = False

        def text(chunk: str) -> None:
            self.any = True
            if on_chunk is not None:
                on_chunk(chunk)

        def arguments(delta: str) -> None:
            self.any = True
            if isinstance(on_chunk, StreamTap):
                on_chunk.arguments(delta)

        super().__init__(text, arguments)


def _inference_error(exc: Exception, model: str) -> InferenceError:
    message = getattr(exc, "message", None) or str(exc)
    status = getattr(exc, "status_code", None)
    text = f"{model}: {message}" if status is None else f"{model}: [{status}] {message}"
    error = InferenceError(text, cause=classify_exception(exc))
    error.status_code = status
    return error


def _naming_missing_keys(error: InferenceError, model: str, api_base: str | None) -> InferenceError:
    """A refused call's error with the unset key variables named: an operator sees what to set."""
    missing = missing_credentials(model, api_base)
    if not missing:
        return error
    named = InferenceError(f"{error} (set {' and '.join(missing)})", cause=error.cause)
    named.status_code = error.status_code
    return named


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
