"""What a hosted robot reports for ``robotlab ps``: runs, tokens and dollars since start, and
whether it is working.

A :class:`RobotStats` is a hook on the hosted robot (it counts every run, however it was
asked for) and the source of the bus client's stats map (``robotlab.bus.member.heartbeat_stats``).
Dollars come from litellm's price table; for a model the table does not know they are
``"unknown"``, never a made-up 0.
"""

from __future__ import annotations

import threading
from typing import Any

from robotlab.hooks.hooks import Hook, RunHookContext
from robotlab.llm import is_priced, model_id


class RobotStats(Hook):
    """Counts one robot's runs; :meth:`read` is the figures its robotd reports."""

    namespace = "robotd_stats"

    def __init__(self, model: str | None = None) -> None:
        self.model = model
        self.runs = 0
        self.errors = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.cost = 0.0
        self.priced = False
        """Whether the model has a price: :meth:`look_up_price` sets it once the LLM client has
        loaded (the lookup imports litellm, seconds cold, which robotd does after joining)."""
        self.running = False
        self._lock = threading.Lock()

    @classmethod
    def of(cls, robot: Any) -> RobotStats:
        """A counter for ``robot``, registered on it; its model names the price."""
        model = getattr(robot, "model", None)
        stats = cls(model_id(model, getattr(robot, "provider", None)) if model else None)
        robot.on(stats)
        return stats

    def look_up_price(self) -> None:
        """Find out whether litellm's price table knows the model (imports litellm if not yet
        loaded)."""
        self.priced = bool(self.model) and is_priced(str(self.model))

    def before_run(self, ctx: RunHookContext) -> None:
        """A run starts: the robot is working."""
        self.running = True

    def after_run(self, ctx: RunHookContext) -> None:
        """A run ended: add what it spent."""
        result = ctx.response
        with self._lock:
            self.runs += 1
            self.tokens_in += int(getattr(result, "input_tokens", 0) or 0)
            self.tokens_out += int(getattr(result, "output_tokens", 0) or 0)
            self.cost += float(getattr(result, "cost", 0.0) or 0.0)
            self.running = False

    def on_run_error(self, ctx: RunHookContext) -> None:
        """A run failed: count it (what it spent is not known here)."""
        with self._lock:
            self.runs += 1
            self.errors += 1
            self.running = False

    def read(self) -> dict[str, Any]:
        """The stats map: ``runs``, ``errors``, ``tokens_in``, ``tokens_out``, ``cost`` (or
        "unknown"), ``status``."""
        with self._lock:
            cost: float | str = self.cost if self.priced or self.cost else "unknown"
            return {"runs": self.runs, "errors": self.errors, "tokens_in": self.tokens_in,
                    "tokens_out": self.tokens_out, "cost": cost, "model": self.model or "",
                    "status": "running" if self.running else "idle"}
