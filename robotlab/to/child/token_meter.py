"""The iteration robot's model calls, metered against what is left of the run's token and cost budgets.

The robot core checks a ``token_budget`` once per run (and raises after a run that crossed
it), so one long run of tool rounds could still spend far past ``--max-tokens``. The meter
sits on the LLM seam, in front of the robot's real LLM: it counts every round trip's tokens
and dollars and refuses the next model call with ``BudgetExceeded`` once the token or the
cost limit of the current attempt is spent. It also gives exact counts for attempts that end
in an error.

Dollars come from litellm's price table. A model the table does not know has no price: its
cost is None ("unknown"), never a made-up 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from robotlab.errors import BudgetExceeded
from robotlab.llm import LLM, ChunkCallback, LLMReply


@functools.cache
def is_priced(model: str) -> bool:
    """True when litellm's price table has ``model`` (a litellm id, provider prefix included)."""
    return price(model, 0, 0) is not None


def price(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Dollars for the tokens at ``model``'s price, or None when the table has no price for it."""
    from robotlab.config.cascade import prepare_litellm_environment

    prepare_litellm_environment()
    import litellm

    try:
        prompt, completion = litellm.cost_per_token(model=model, prompt_tokens=input_tokens,
                                                    completion_tokens=output_tokens)
    except Exception:  # litellm raises several types for "not in the table"
        return None
    return float(prompt + completion)


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
        self.on_usage: Callable[[], None] | None = None

    @property
    def used(self) -> int:
        """Tokens used since ``start``."""
        return self.input_tokens + self.output_tokens

    @property
    def exhausted(self) -> bool:
        """True once the attempt has used its whole token or cost limit."""
        if self.limit is not None and self.used >= self.limit:
            return True
        return self.cost_limit is not None and self.cost is not None and self.cost >= self.cost_limit

    def start(self, limit: int | None, cost_limit: float | None = None) -> None:
        """Begin an attempt that may use ``limit`` tokens and ``cost_limit`` dollars (None: no limit)."""
        self.limit, self.cost_limit = limit, cost_limit
        self.input_tokens = self.output_tokens = 0
        self.cost = 0.0

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
            raise BudgetExceeded(f"budget reached: {self.used} tokens and ${self.cost or 0:.4f} used "
                                 f"({self.limit} tokens, ${self.cost_limit} were left)")
        reply = self.inner.complete(messages, tools, params, on_chunk)
        self.input_tokens += reply.usage.input_tokens
        self.output_tokens += reply.usage.output_tokens
        self.cost = add_cost(self.cost, price(str(params.get("model")), reply.usage.input_tokens,
                                              reply.usage.output_tokens))
        if self.on_usage is not None:
            self.on_usage()
        return reply
