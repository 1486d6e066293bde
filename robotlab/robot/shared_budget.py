"""Budgets across processes: a spawned robot draws on its parent's ledger over the bus.

A parent with a ``token_budget`` or ``cost_budget`` that spawns serves its budget as a bus
member of its own, ``budget/<name>/<instance>`` (its own connection and dispatcher thread, so
a parent busy in a run still answers). The child's one budget check, right before its LLM
work, reserves on its own ledger (if it has limits) and then on the parent's: the parent's
whole remaining amount, exactly as the parent would for itself. After the work the child
reconciles with what it spent; the call that crosses the parent's limit raises
``InferenceError`` in the child, and from then on every robot of the subtree, the parent
included, is refused up front with ``BudgetExceeded``, which names the parent's budget.
Grandchildren draw on their parent, which draws on its own: a whole tree shares the root's cap.

A child that cannot reach its parent's ledger (the parent is gone, or left the bus) cannot
reserve: it raises ``BudgetExceeded`` and spends nothing.

Requests are ``{"op": "reserve" | "settle" | "release", ...}``; replies ``{"ok": ...}`` or
``{"error": "..."}``.
"""

from __future__ import annotations

import logging
from typing import Any

from robotlab.budget import Reservation, RobotBudget
from robotlab.errors import BudgetExceeded, BusError, InferenceError

__all__ = ["BudgetService", "ParentLedger", "SharedBudget", "budget_service_for",
           "share_parent_budget"]

log = logging.getLogger("robotlab.budget")

REQUEST_TIMEOUT = 5.0
"""Seconds a child waits for its parent's ledger before it gives up and spends nothing."""


class BudgetService:
    """Answers a robot's spawned children's ledger requests, on a bus connection of its own."""

    def __init__(self, robot: Any, client: Any) -> None:
        self.robot = robot
        self.client = client
        self.name = client.name
        client.on_message(self.handle)

    def handle(self, message: Any) -> None:
        """Apply one request to the robot's current budget and reply."""
        content = message.content if isinstance(message.content, dict) else {}
        budget = self.robot._budget
        op = content.get("op")
        try:
            if op == "reserve":
                reservation = budget.reserve()
                answer: Any = {"amounts": reservation.amounts, "upstream": reservation.upstream}
            elif op in ("settle", "release"):
                reservation = Reservation(dict(content.get("amounts") or {}),
                                          dict(content.get("upstream") or {}))
                if op == "release":
                    budget.release(reservation)
                    answer = None
                else:
                    answer = budget.settle_shared(reservation, int(content.get("tokens") or 0),
                                                  float(content.get("cost") or 0.0),
                                                  self.robot.name)
            else:
                raise ValueError(f"unknown budget request {op!r}")
        except Exception as exc:  # the boundary: a child's request never breaks the parent
            self.client.reply(message, {"error": str(exc)})
            return
        self.client.reply(message, {"ok": answer})

    def close(self) -> None:
        """Leave the bus: children can no longer reserve."""
        self.client.close()


def budget_service_for(robot: Any) -> str | None:
    """The bus name of ``robot``'s budget service (started on first use).

    None without a budget.
    """
    if not robot._budget.shares():
        return None
    messaging = robot.messaging
    if messaging.budget_service is None:
        from robotlab import bus

        client = messaging.require_client()
        name = f"budget/{robot.name}/{client.instance}"
        messaging.budget_service = BudgetService(robot, bus.connect(client.url, name=name))
    return messaging.budget_service.name


class ParentLedger:
    """The child's side: the parent's budget service, reached through the child's bus connection."""

    def __init__(self, robot: Any, service: str, owner: str) -> None:
        self.robot = robot
        self.service = service
        self.owner = owner

    def _ask(self, content: dict[str, Any]) -> Any:
        try:
            client = self.robot.messaging.require_client()
            reply = client.request(self.service, content, timeout=REQUEST_TIMEOUT, type="budget")
        except BusError as exc:
            raise BudgetExceeded(f"cannot reserve on the budget of robot '{self.owner}' (its "
                                 f"ledger did not answer: {exc}); a spawned robot never spends "
                                 "without it") from exc
        answer = reply.content if isinstance(reply.content, dict) else {}
        if "error" in answer:
            raise BudgetExceeded(f"{answer['error']} (the budget of robot '{self.owner}', shared "
                                 "by the robots it spawned)")
        return answer.get("ok")

    def reserve(self) -> dict[str, Any]:
        """Hold the parent's remaining budget for one run.

        Raises:
            BudgetExceeded: the parent's budget is used up, or its ledger cannot be reached.
        """
        return dict(self._ask({"op": "reserve"}) or {})

    def settle(self, held: dict[str, Any], tokens: int, cost: float) -> str | None:
        """Report what the run spent; the crossed limit of the parent's budget, or None."""
        return self._ask({"op": "settle", "tokens": tokens, "cost": cost, **held})

    def release(self, held: dict[str, Any]) -> None:
        """Give back what a failed run held (best effort: a gone parent holds nothing anyway)."""
        try:
            self._ask({"op": "release", **held})
        except BudgetExceeded as exc:
            log.warning("could not release a reservation on %s: %s", self.service, exc)


class SharedBudget:
    """A robot's own budget (limits optional) plus its parent's, checked at the same choke point."""

    def __init__(self, own: RobotBudget, parent: ParentLedger) -> None:
        self.own = own
        self.parent = parent

    @property
    def ledger(self) -> Any:
        """The robot's own ledger (None without its own limits)."""
        return self.own.ledger

    def reserve(self) -> Reservation:
        """Reserve on the own ledger, then on the parent's.

        Raises:
            BudgetExceeded: either budget is used up, or the parent's ledger cannot be reached.
        """
        reservation = self.own.reserve()
        try:
            reservation.upstream = {"parent": self.parent.reserve()}
        except BaseException:
            self.own.release(reservation)
            raise
        return reservation

    def release(self, reservation: Reservation) -> None:
        """Give back a failed run's reservations, own and parent's."""
        self.own.release(reservation)
        held = _held_upstream(reservation)
        if held is not None:
            self.parent.release(held)

    def settle(self, reservation: Reservation, tokens: int, cost: float,
               cumulative_tokens: int) -> None:
        """Reconcile both; raise if the run crossed the own or the parent's budget.

        Raises:
            InferenceError: a budget was crossed by this run.
        """
        crossed = self._settle_parent(reservation, tokens, cost)
        self.own.settle(reservation, tokens, cost, cumulative_tokens)
        if crossed:
            raise InferenceError(crossed)

    def settle_shared(self, reservation: Reservation, tokens: int, cost: float,
                      owner: str) -> str | None:
        """Reconcile a grandchild's spending here and upstream.

        Returns the first crossed limit, or None.
        """
        crossed = self.own.settle_shared(reservation, tokens, cost, owner)
        return self._settle_parent(reservation, tokens, cost) or crossed

    def _settle_parent(self, reservation: Reservation, tokens: int, cost: float) -> str | None:
        held = _held_upstream(reservation)
        return self.parent.settle(held, tokens, cost) if held is not None else None

    def with_limits(self, token_budget: int | None, cost_budget: float | None) -> SharedBudget:
        """New own limits, the same parent."""
        return SharedBudget(self.own.with_limits(token_budget, cost_budget), self.parent)

    def shares(self) -> bool:
        """A child of a shared budget draws on it too (and so on up the tree)."""
        return True

    def reset(self) -> None:
        """Start the own ledger over (the parent's is the parent's)."""
        self.own.reset()


def share_parent_budget(robot: Any, service: str, owner: str) -> None:
    """Make ``robot`` (a spawned child) draw on its parent's budget served as ``service``."""
    robot._budget = SharedBudget(robot._budget, ParentLedger(robot, service, owner))


def _held_upstream(reservation: Reservation) -> dict[str, Any] | None:
    """What ``reservation`` holds on the parent's ledger (a plain dict from the wire), if
    anything."""
    held = reservation.upstream.get("parent")
    return dict(held) if isinstance(held, dict) else None
