"""An iteration's runs of its robot: each message through the child, its tokens and results kept."""

from __future__ import annotations

from typing import Any

from robotlab.to.child.robot import AttemptReport, RobotChild
from robotlab.to.guards.quality import correction_message
from robotlab.to.runner.outcome_types import Outcome, OutcomeKind
from robotlab.to.runner.progress import ChildProgress
from robotlab.to.runner.session import Session
from robotlab.to.runner.stop_conditions import budget_spent
from robotlab.to.tools.submit import IterationResult


class Attempts:
    """Runs messages through the child; keeps the newest result; records tokens and decisions."""

    def __init__(self, session: Session, child: RobotChild) -> None:
        self.session = session
        self.child = child
        self.result: IterationResult | None = None
        self.corrections: list[str] = []
        self.unsubmitted = False
        """The robot never submitted, and the gate decides (the gate decides, see ``iteration``)."""

    def run(self, message: str, shown: dict[str, str] | None = None,
            hotter: int = 0, output: str = "") -> AttemptReport:
        """One robot run (first message, nudge or repair), within what is left of the token budget.

        The quality monitor's corrections from the previous run go in front of ``message``;
        ``shown`` are the files a whole-file reply may rewrite, sampled ``hotter`` steps above the
        robot's temperature; ``output`` the verify output the message showed (no file).
        """
        session = self.session
        session.log.event("agent:run:start", iteration=session.run.iteration)
        session.status.update(phase="robot")
        message, self.corrections = "\n\n".join([*self.corrections, message]), []
        report = self.child.run(message, remaining_tokens(session), remaining_cost(session),
                                ChildProgress(session), shown, hotter, output)
        session.log.event("agent:run:end", iteration=session.run.iteration,
                          last_reply=report.last_reply)
        session.add_usage(report.input_tokens, report.output_tokens, report.cost, report.estimated)
        if report.result:
            self.result = IterationResult(**report.result)
        for request in report.decisions:
            self._record_decision(request)
        for reason in report.quality:
            session.log.event("quality:warning", iteration=session.run.iteration, reason=reason)
            self.corrections.append(correction_message(reason))
        if report.budget_stop:
            session.log.event("budget:stop", iteration=session.run.iteration,
                              total_tokens=session.run.total_tokens)
        return report

    def _record_decision(self, request: dict[str, Any]) -> None:
        session = self.session
        decision = session.decisions.write(request, session.run.iteration)
        session.log.event("decision:raised", id=decision.id, blocking=decision.blocking,
                          question=decision.question)
        session.notes.decision(session.run.iteration, decision.question, decision.blocking,
                               decision.recommendation, str(decision.path))
        if session.ask_human is not None:
            session.ask_human(decision.id, request)

    def budget_left(self) -> bool:
        """False once a stop was requested or the token or cost budget is spent."""
        session = self.session
        return not session.stopping and not budget_spent(session.run, session.settings)


def remaining_cost(session: Session) -> float | None:
    """What is left of ``--max-cost`` in dollars (None without a limit, or while the cost is
    unknown)."""
    limit, spent = session.settings.max_cost, session.run.cost_usd
    return None if limit is None or spent is None else max(limit - spent, 0.0)


def remaining_tokens(session: Session) -> int | None:
    """What is left of ``--max-tokens`` (None without a limit)."""
    limit = session.settings.max_tokens
    return None if limit is None else max(limit - session.run.total_tokens, 0)


def ended(report: AttemptReport, attempts: Attempts) -> Outcome | None:
    result = attempts.result or IterationResult.missing()
    if report.budget_stop and attempts.result is None:
        return Outcome(OutcomeKind.BUDGET, result)
    if report.error is None:
        return None
    if report.error.is_interrupt:
        return Outcome(OutcomeKind.INTERRUPTED, result)
    return Outcome(OutcomeKind.ERROR, result, error=report.error)
