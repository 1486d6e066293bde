"""One deadline for a model call and all its retries, with every retry told to the orchestrator.

The provider client's own retries (a request time-out of 120 s, 3 retries) once made one call
take 8 minutes, invisibly. Here the client makes no retries of its own; this wrapper retries
transient failures (time-outs, 429, 5xx, dropped connections) with a short backoff, gives
each try what is left of the call's deadline as its time-out, and reports each retry with
its wait, so the live view can show it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from robotlab.errors import InferenceError
from robotlab.llm import LLM, ChunkCallback, LLMReply
from robotlab.to.process.failure import Cause, describe_error

FIRST_WAIT = 0.5
"""Seconds before the first retry; doubled for each later one (as the provider clients do)."""

RetryReport = Callable[[dict[str, Any]], None]


class DeadlineLLM:
    """An ``LLM`` whose every call, retries included, ends within ``seconds``."""

    def __init__(self, inner: LLM, seconds: float | None, retries: int, on_retry: RetryReport | None = None) -> None:
        self.inner = inner
        self.seconds = seconds
        self.retries = retries
        self.on_retry = on_retry

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        on_chunk: ChunkCallback | None = None,
    ) -> LLMReply:
        """One call through ``inner``, retried while the failure is transient and time is left.

        Raises:
            InferenceError: a permanent failure, the last retry's failure, or the deadline passed.
        """
        deadline = None if self.seconds is None else time.monotonic() + self.seconds
        attempt = 0
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise InferenceError(f"the model call timed out: no answer within its {self.seconds:g}s deadline "
                                     f"({attempt} tries)")
            try:
                return self.inner.complete(messages, tools, {**params, **({"timeout": left} if left else {})}, on_chunk)
            except InferenceError as exc:
                failure = describe_error(exc)
                if failure.permanent or failure.cause == Cause.CONTEXT_WINDOW or attempt >= self.retries:
                    raise
                wait = FIRST_WAIT * 2**attempt
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None:
                    wait = min(wait, max(left, 0.0))
                attempt += 1
                self._report(attempt, wait, left, failure.cause)
                time.sleep(wait)

    def _report(self, attempt: int, wait: float, left: float | None, cause: Cause) -> None:
        if self.on_retry is not None:
            self.on_retry({"event": "model:retry", "attempt": attempt, "of": self.retries, "wait": round(wait, 2),
                           "deadline_left": None if left is None else round(left, 1), "cause": str(cause)})
