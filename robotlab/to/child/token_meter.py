"""The iteration robot's model calls, metered against what is left of the run's token and cost
budgets.

The robot core checks a ``token_budget`` once per run (and raises after a run that crossed
it), so one long run of tool rounds could still spend far past ``--max-tokens``. The meter
sits on the LLM seam, in front of the robot's real LLM: it counts every round trip's tokens
and dollars and refuses the next model call with ``BudgetExceeded`` once the token or the
cost limit of the current attempt is spent. It also gives exact counts for attempts that end
in an error.

Dollars come from litellm's price table. A model the table does not know has no price: its
cost is None ("unknown"), never a made-up 0.

While a reply streams, the meter counts its chunks (about one token each), the text's and the
tool-call arguments' alike (a ``write`` call streams its whole file as arguments), and reports
the count at most every ``STREAM_REPORT_INTERVAL`` seconds, so the live view moves before the
provider's usage arrives at the end of the call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from robotlab.errors import BudgetExceeded
from robotlab.llm import LLM, ChunkCallback, LLMReply, StreamTap, is_priced
from robotlab.llm import price as list_price

STREAM_REPORT_INTERVAL = 0.5
"""Seconds between two reports of a streaming reply's chunk count."""


def price(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Dollars for the tokens at ``model``'s price, or None when the table has no price for it."""
    return list_price(model, input_tokens, output_tokens) if is_priced(model) else None


def add_cost(total: float | None, cost: float | None) -> float | None:
    """A running cost: once one part is unknown, the sum is unknown."""
    return None if total is None or cost is None else total + cost


class MeteredLLM:
    """An ``LLM`` that counts tokens and dollars and refuses calls past its limits."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.limit: int | None = None
        self.cost_limit: float | None = None
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost: float | None = 0.0
        self.estimated = False
        """True once a reply of the attempt came without the provider's usage (its count is an
        estimate)."""
        self.on_usage: Callable[[], None] | None = None
        self.on_streaming: Callable[[int, float | None], None] | None = None
        """Called with a streaming reply's chunks so far and their estimated dollars (None: no
        price)."""

    @property
    def used(self) -> int:
        """Tokens used since ``start``."""
        return self.input_tokens + self.output_tokens

    @property
    def exhausted(self) -> bool:
        """True once the attempt has used its whole token or cost limit."""
        if self.limit is not None and self.used >= self.limit:
            return True
        return (self.cost_limit is not None and self.cost is not None
                and self.cost >= self.cost_limit)

    def start(self, limit: int | None, cost_limit: float | None = None) -> None:
        """Begin an attempt that may use ``limit`` tokens and ``cost_limit`` dollars (None: no
        limit)."""
        self.limit, self.cost_limit = limit, cost_limit
        self.input_tokens = self.output_tokens = 0
        self.cost = 0.0
        self.estimated = False

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        on_chunk: ChunkCallback | None = None,
    ) -> LLMReply:
        """One round trip through the real LLM, unless a limit is already spent.

        Raises:
            BudgetExceeded: the attempt's tokens or dollars reached its limit (nothing is sent).
        """
        if self.exhausted:
            raise BudgetExceeded(f"budget reached: {self.used} tokens and "
                                 f"${self.cost or 0:.4f} used "
                                 f"({self.limit} tokens, ${self.cost_limit} were left)")
        model = str(params.get("model"))
        reply = self.inner.complete(messages, tools, params, self._counting(on_chunk, model))
        self.input_tokens += reply.usage.input_tokens
        self.output_tokens += reply.usage.output_tokens
        self.estimated = self.estimated or reply.usage.estimated
        self.cost = add_cost(self.cost,
                             price(model, reply.usage.input_tokens, reply.usage.output_tokens))
        if self.on_usage is not None:
            self.on_usage()
        return reply

    def _counting(self, on_chunk: ChunkCallback | None, model: str) -> ChunkCallback | None:
        """``on_chunk`` that also counts the text and tool-argument chunks and reports the count,
        throttled."""
        report = self.on_streaming
        if on_chunk is None or report is None:
            return on_chunk
        chunks, last = 0, time.monotonic()

        def count(_piece: str) -> None:
            nonlocal chunks, last
            chunks += 1
            now = time.monotonic()
            if now - last >= STREAM_REPORT_INTERVAL:
                last = now
                report(chunks, price(model, 0, chunks) if is_priced(model) else None)

        def text(chunk: str) -> None:
            on_chunk(chunk)
            count(chunk)

        def arguments(delta: str) -> None:
            if isinstance(on_chunk, StreamTap):  # a listener in front of the meter hears them too
                on_chunk.arguments(delta)
            count(delta)

        return StreamTap(text, arguments)
