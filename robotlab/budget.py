"""Budgets: a thread-safe reserve/reconcile ledger and the robot's one choke point on it.

Before a run's LLM work every limited dimension reserves its whole remaining amount; the
reservation fails (``BudgetExceeded``, nothing spent) only when consumption is already strictly
over the limit. After the run the reservation is reconciled with what was spent, and the run
that crossed a limit raises ``InferenceError`` (it already spent). A failed run releases its
reservation.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

from robotlab.errors import BudgetExceeded, InferenceError

__all__ = ["Ledger", "Reservation", "RobotBudget"]


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class Ledger:
    """Limits, consumption and reservations per dimension (``tokens``, ``cost``, or any name)."""

    def __init__(self, limits: dict[str, float] | None = None,
                 consumed: dict[str, float] | None = None) -> None:
        self.limits: dict[str, float] = dict(limits or {})
        self._consumed: dict[str, float] = dict(consumed or {})
        self._reserved: dict[str, float] = {}
        self._lock = threading.Lock()

    def consumed(self, key: str) -> float:
        """What has been spent on ``key`` (0 when nothing)."""
        with self._lock:
            return self._consumed.get(key, 0)

    def reserved(self, key: str) -> float:
        """What is held for calls in flight on ``key``."""
        with self._lock:
            return self._reserved.get(key, 0)

    def reserve(self, key: str, amount: float) -> None:
        """Hold ``amount`` of ``key``; a no-op for dimensions without a limit.

        Raises:
            BudgetExceeded: consumed + reserved + amount would pass the limit.
        """
        with self._lock:
            if key not in self.limits:
                return
            total = self._consumed.get(key, 0) + self._reserved.get(key, 0) + amount
            if total > self.limits[key]:
                raise BudgetExceeded(f"budget exceeded for {key}: {_number(total)} > "
                                     f"{_number(self.limits[key])}")
            self._reserved[key] = self._reserved.get(key, 0) + amount

    def reconcile(self, key: str, reserved_amount: float, actual: float) -> None:
        """Turn a reservation into real consumption."""
        with self._lock:
            self._reserved[key] = max(self._reserved.get(key, 0) - reserved_amount, 0)
            self._consumed[key] = self._consumed.get(key, 0) + actual

    def release(self, key: str, amount: float) -> None:
        """Give back a reservation that was not spent."""
        with self._lock:
            self._reserved[key] = max(self._reserved.get(key, 0) - amount, 0)

    def remaining(self, key: str) -> float:
        """What is left of ``key``: ``inf`` without a limit, never below 0."""
        with self._lock:
            if key not in self.limits:
                return math.inf
            left = self.limits[key] - self._consumed.get(key, 0) - self._reserved.get(key, 0)
            return max(left, 0)

    def reset(self) -> None:
        """Forget consumption and reservations (limits stay)."""
        with self._lock:
            self._consumed.clear()
            self._reserved.clear()


@dataclass
class Reservation:
    """What one run holds, per dimension (``upstream``: what it holds on a parent's ledger)."""

    amounts: dict[str, float] = field(default_factory=dict)
    upstream: dict[str, object] = field(default_factory=dict)


class RobotBudget:
    """A robot's token and cost budgets over a ledger (no ledger when neither is set)."""

    def __init__(self, token_budget: int | None = None, cost_budget: float | None = None) -> None:
        self.token_budget = token_budget
        self.cost_budget = cost_budget
        limits = {k: v for k, v in (("tokens", token_budget), ("cost", cost_budget))
                  if v is not None}
        self.ledger: Ledger | None = Ledger(limits) if limits else None

    def reserve(self) -> Reservation:
        """The one budget check, right before a run's LLM work.

        Raises:
            BudgetExceeded: a budget is already used up.
        """
        reservation = Reservation()
        if self.ledger is None:
            return reservation
        for key in self.ledger.limits:
            amount = self.ledger.remaining(key)
            self.ledger.reserve(key, amount)
            reservation.amounts[key] = amount
        return reservation

    def release(self, reservation: Reservation) -> None:
        """Give back a failed run's reservation."""
        if self.ledger is not None:
            for key, amount in reservation.amounts.items():
                self.ledger.release(key, amount)

    def settle(self, reservation: Reservation, tokens: int, cost: float,
               cumulative_tokens: int) -> None:
        """Reconcile a finished run and raise if it crossed a budget.

        Raises:
            InferenceError: the run went over the token or cost budget.
        """
        if self.ledger is None:
            return
        self._reconcile(reservation, tokens, cost)
        if self.token_budget is not None and cumulative_tokens > self.token_budget:
            raise InferenceError(
                f"Token budget exceeded: {cumulative_tokens} tokens used, "
                f"budget is {self.token_budget}"
            )
        if self.cost_budget is not None and self.ledger.consumed("cost") > self.cost_budget:
            raise InferenceError(
                f"Cost budget exceeded: ${self.ledger.consumed('cost'):.6f} used, "
                f"budget is ${self.cost_budget:.6f}"
            )

    def _reconcile(self, reservation: Reservation, tokens: int, cost: float) -> None:
        assert self.ledger is not None
        actual = {"tokens": tokens, "cost": cost}
        for key, amount in reservation.amounts.items():
            self.ledger.reconcile(key, amount, actual.get(key, 0))

    def settle_shared(self, reservation: Reservation, tokens: int, cost: float,
                      owner: str) -> str | None:
        """Reconcile what a spawned robot spent on this budget.

        Returns:
            the crossed limit, in words naming ``owner``'s budget, or None.
        """
        if self.ledger is None:
            return None
        self._reconcile(reservation, tokens, cost)
        used = self.ledger.consumed("tokens")
        if self.token_budget is not None and used > self.token_budget:
            return (f"Token budget of robot '{owner}' exceeded: {_number(used)} tokens used by it "
                    f"and the robots it spawned, budget is {self.token_budget}")
        spent = self.ledger.consumed("cost")
        if self.cost_budget is not None and spent > self.cost_budget:
            return (f"Cost budget of robot '{owner}' exceeded: ${spent:.6f} used by it and the "
                    f"robots it spawned, budget is ${self.cost_budget:.6f}")
        return None

    def with_limits(self, token_budget: int | None, cost_budget: float | None) -> RobotBudget:
        """A fresh budget with these limits (``Robot.update``)."""
        return RobotBudget(token_budget, cost_budget)

    def shares(self) -> bool:
        """True when a spawned child should draw on this budget (it has a limit)."""
        return self.ledger is not None

    def reset(self) -> None:
        """Start the ledger over (``reset_token_totals``)."""
        if self.ledger is not None:
            self.ledger.reset()
