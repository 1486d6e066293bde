"""The iteration robot's model calls, metered against what is left of the run's token budget.

The robot core checks a ``token_budget`` once per run (and raises after a run that crossed
it), so one long run of tool rounds could still spend far past ``--max-tokens``. The meter
sits on the LLM seam, in front of the robot's real LLM: it counts every round trip's tokens
and refuses the next model call with ``BudgetExceeded`` once the budget of the current attempt
is spent. It also gives exact token counts for attempts that end in an error.
"""

from __future__ import annotations

from typing import Any

from robotlab.errors import BudgetExceeded
from robotlab.llm import LLM, ChunkCallback, LLMReply


class MeteredLLM:
    """An ``LLM`` that counts tokens and refuses calls past its limit."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.limit: int | None = None
        self.input_tokens = 0
        self.output_tokens = 0

    @property
    def used(self) -> int:
        """Tokens used since ``start``."""
        return self.input_tokens + self.output_tokens

    @property
    def exhausted(self) -> bool:
        """True once the attempt has used its whole limit."""
        return self.limit is not None and self.used >= self.limit

    def start(self, limit: int | None) -> None:
        """Begin an attempt that may use ``limit`` tokens (None: no limit)."""
        self.limit = limit
        self.input_tokens = self.output_tokens = 0

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        on_chunk: ChunkCallback | None = None,
    ) -> LLMReply:
        """One round trip through the real LLM, unless the limit is already spent.

        Raises:
            BudgetExceeded: the attempt's tokens reached its limit (nothing is sent).
        """
        if self.exhausted:
            raise BudgetExceeded(f"token budget reached: {self.used} tokens used, {self.limit} were left")
        reply = self.inner.complete(messages, tools, params, on_chunk)
        self.input_tokens += reply.usage.input_tokens
        self.output_tokens += reply.usage.output_tokens
        return reply
