"""One iteration: a fresh robot in a child process, nudges, the eval, repairs in place.

Returns an ``Outcome``; the caller (``outcomes.apply``) commits or rolls back. Nothing
here touches git except through the eval's read-only look at the tree.
"""

from __future__ import annotations

import time
from typing import Any

from robotlab.llm import model_id
from robotlab.to.child.robot import AttemptReport, ChildPlan, RobotChild
from robotlab.to.child.token_meter import price
from robotlab.to.evals.registry import is_scored
from robotlab.to.evals.score import Context, Score
from robotlab.to.guards.chain import GuardSettings
from robotlab.to.guards.grader_lock import GraderLock
from robotlab.to.guards.quality import correction_message
from robotlab.to.process.failure import describe_error
from robotlab.to.runner import prompt
from robotlab.to.runner.outcome_types import Outcome, OutcomeKind
from robotlab.to.runner.progress import ChildProgress, command_reporter
from robotlab.to.runner.session import Session
from robotlab.to.runner.stop_conditions import budget_spent
from robotlab.to.tools.submit import IterationResult

NO_SUBMIT = "no submit; verify passed"


def lock_for(session: Session) -> GraderLock:
    """The grader lock of this iteration: the eval's own files plus ``--protect-path``."""
    protected = list(session.evaluator.protected_paths()) if hasattr(session.evaluator, "protected_paths") else []
    return GraderLock(session.root, [*protected, *session.lock_patterns])


def _plan(session: Session, lock: GraderLock) -> ChildPlan:
    decisions = session.decisions.resolved() if session.settings.decisions_enabled else []
    files = session.git.tracked_files()
    texts = prompt.small_project(session.root, files) if session.settings.local_guards else {}
    inputs = prompt.PromptInputs(
        objective=session.run.objective, iteration=session.run.iteration, notes_path=session.run.notes_path,
        notes=session.notes.read(), files=files, decisions=decisions,
        scored=is_scored(session.evaluator, session.settings), last_score_value=session.run.best_score_value,
        target=session.settings.eval_target, iterations_since_improvement=session.run.iterations_since_improvement,
        verify_command=session.settings.verify_command, decisions_enabled=session.settings.decisions_enabled,
        commit_failure=session.commit_failure, stop_when=session.settings.stop_when,
        locked=[p for p in lock.patterns], file_texts=texts, local_tools=session.settings.local_guards,
    )
    guard = GuardSettings(session.root, session.settings.local_guards, session.settings.write_guard,
                          f"{session.run.run_dir}/checkpoints", shown=tuple(texts))
    name = f"robot-to-{session.run.run_id}-{session.run.iteration}"
    crew = tuple(session.settings.crew) if session.ask_crew is not None else ()
    return ChildPlan(name, prompt.system_prompt(inputs), session.model, guard, lock.patterns, session.settings.decisions_enabled,
                     remaining_tokens(session), crew)


class Attempts:
    """Runs messages through the child; keeps the newest result; records tokens and decisions."""

    def __init__(self, session: Session, child: RobotChild) -> None:
        self.session = session
        self.child = child
        self.result: IterationResult | None = None
        self.corrections: list[str] = []
        self.unsubmitted = False
        """The robot never submitted, and the gate decides (``_gate_decides``)."""

    def run(self, message: str) -> AttemptReport:
        """One robot run (first message, nudge or repair), within what is left of the token budget.

        The quality monitor's corrections from the previous run go in front of ``message``.
        """
        session = self.session
        session.log.event("agent:run:start", iteration=session.run.iteration)
        session.status.update(phase="robot")
        message, self.corrections = "\n\n".join([*self.corrections, message]), []
        report = self.child.run(message, remaining_tokens(session), remaining_cost(session), ChildProgress(session))
        session.log.event("agent:run:end", iteration=session.run.iteration, last_reply=report.last_reply)
        session.add_usage(report.input_tokens, report.output_tokens, report.cost, report.estimated)
        if report.result:
            self.result = IterationResult(**report.result)
        for request in report.decisions:
            self._record_decision(request)
        for reason in report.quality:
            session.log.event("quality:warning", iteration=session.run.iteration, reason=reason)
            self.corrections.append(correction_message(reason))
        if report.budget_stop:
            session.log.event("budget:stop", iteration=session.run.iteration, total_tokens=session.run.total_tokens)
        return report

    def _record_decision(self, request: dict[str, Any]) -> None:
        session = self.session
        decision = session.decisions.write(request, session.run.iteration)
        session.log.event("decision:raised", id=decision.id, blocking=decision.blocking, question=decision.question)
        session.notes.decision(session.run.iteration, decision.question, decision.blocking, decision.recommendation,
                         str(decision.path))

    def budget_left(self) -> bool:
        """False once a stop was requested or the token or cost budget is spent."""
        return not self.session.stopping and not budget_spent(self.session.run, self.session.settings)


def run_iteration(session: Session) -> Outcome:
    """Run one iteration up to (not including) commit or rollback."""
    lock = lock_for(session)
    before = lock.snapshot()
    timeout = session.settings.iteration_timeout
    # The deadline bounds everything the iteration forks: the robot's child and the judge's.
    session.watch.deadline = time.monotonic() + timeout if timeout else None
    child = RobotChild(_plan(session, lock), session.supervisor, session.watch)
    child.start()
    try:
        attempts = Attempts(session, child)
        first = _work(session, attempts)
        if first is not None:
            return first
        return _gate(session, attempts, lock, before)
    finally:
        child.close()
        session.watch.deadline = None


def remaining_cost(session: Session) -> float | None:
    """What is left of ``--max-cost`` in dollars (None without a limit, or while the cost is unknown)."""
    limit, spent = session.settings.max_cost, session.run.cost_usd
    return None if limit is None or spent is None else max(limit - spent, 0.0)


def remaining_tokens(session: Session) -> int | None:
    """What is left of ``--max-tokens`` (None without a limit)."""
    limit = session.settings.max_tokens
    return None if limit is None else max(limit - session.run.total_tokens, 0)


def _ended(report: AttemptReport, attempts: Attempts) -> Outcome | None:
    result = attempts.result or IterationResult.missing()
    if report.budget_stop and attempts.result is None:
        return Outcome(OutcomeKind.BUDGET, result)
    if report.error is None:
        return None
    if report.error.is_interrupt:
        return Outcome(OutcomeKind.INTERRUPTED, result)
    return Outcome(OutcomeKind.ERROR, result, error=report.error)


def _work(session: Session, attempts: Attempts) -> Outcome | None:
    """The first run and the nudges; an Outcome when the iteration ends before the eval."""
    ended = _ended(attempts.run(session.run.objective), attempts)
    if ended:
        return ended
    for attempt in range(1, session.settings.max_submit_nudges + 1):
        if attempts.result is not None or not attempts.budget_left():
            break
        session.log.event("agent:nudge", iteration=session.run.iteration, attempt=attempt)
        session.status.say(f"iteration {session.run.iteration}: no result submitted — nudging ({attempt}/{session.settings.max_submit_nudges})")
        ended = _ended(attempts.run(prompt.NUDGE), attempts)
        if ended:
            return ended
    result = attempts.result or IterationResult.missing()
    if session.stopping:
        return Outcome(OutcomeKind.INTERRUPTED, result)
    if attempts.result is None and _gate_decides(session):
        attempts.unsubmitted = True
        return None
    return None if result.success else Outcome(OutcomeKind.FAILURE, result)


def _gate_decides(session: Session) -> bool:
    """A robot that never submitted gets the gate anyway when a verify command is set and the
    iteration changed files: small models edit and stop without the submit call, and the verify
    command, not the robot's claim, is what a commit rests on (docs: "No submit")."""
    return bool(session.settings.verify_command) and bool(session.git.changed_vs_worktree("HEAD"))


def _unsubmitted_result(session: Session) -> IterationResult:
    """The result of an iteration that never submitted and whose changes passed the gate."""
    files = session.git.changed_vs_worktree("HEAD")
    session.log.event("iteration:no_submit", iteration=session.run.iteration, detail=NO_SUBMIT, files=files)
    session.status.say(f"iteration {session.run.iteration}: {NO_SUBMIT}")
    return IterationResult(success=True, summary=NO_SUBMIT, key_changes=files)


def evaluate(session: Session) -> Score:
    """Score the working tree against HEAD and log the ``eval`` event."""
    session.status.update(phase="eval")
    run = session.run
    # --require-improvement means "beat the best committed score", not only the parent's (which
    # may be lower after a commit made with --no-require-improvement).
    previous = run.best_score_value if session.settings.require_improvement else run.last_score_value
    context = Context(session.root, session.git.head_sha(), previous, run.objective, run.iteration,
                      on_command=command_reporter(session))
    score = session.evaluator.score(context)
    if not isinstance(score, Score):
        raise TypeError(f"eval returned {type(score).__name__}, not Score")
    session.add_usage(score.input_tokens, score.output_tokens, judge_cost(session, score))
    session.log.event("eval", iteration=run.iteration, gate=score.gate_ok, improved=score.improved, value=score.value,
                met_target=score.met_target, detail=score.detail, judge_reply=score.reply)
    return score


def judge_cost(session: Session, score: Score) -> float | None:
    """The dollars of the eval's model call (a prose judge), at the judge model's price."""
    if not score.input_tokens and not score.output_tokens:
        return 0.0
    settings = session.settings
    return price(model_id(settings.eval_judge_model or settings.model, settings.provider), score.input_tokens,
                 score.output_tokens)


def _gate(session: Session, attempts: Attempts, lock: GraderLock, before: dict[str, str | None]) -> Outcome:
    """Evaluate; repair in place while the gate fails; classify the result."""
    budget = session.settings.max_verify_repairs
    for attempt in range(budget + 1):
        result = attempts.result or IterationResult.missing()
        tampered = lock.changed(before)
        if tampered:
            return Outcome(OutcomeKind.TAMPERED, result, tampered=tampered)
        try:
            score = evaluate(session)
        except Exception as exc:  # an eval failure takes the same retry path as a robot error
            if session.stopping:
                return Outcome(OutcomeKind.INTERRUPTED, result)
            return Outcome(OutcomeKind.ERROR, result, error=describe_error(exc))
        if session.stopping:
            return Outcome(OutcomeKind.INTERRUPTED, result, score)
        if score.gate_ok or attempt == budget or not attempts.budget_left():
            break
        session.log.event("eval:repair", iteration=session.run.iteration, attempt=attempt + 1, reason=score.detail)
        session.status.say(f"iteration {session.run.iteration}: verification failed ({score.detail}) — "
                           f"repairing ({attempt + 1}/{budget})")
        report = attempts.run(prompt.repair_message(session.settings.verify_command, score.output))
        if report.error is not None:
            session.log.event("eval:repair_error", iteration=session.run.iteration, message=report.error.message)
            if report.error.is_interrupt:
                return Outcome(OutcomeKind.INTERRUPTED, result, score)
            break
    if attempts.result is None and attempts.unsubmitted and score.gate_ok:
        return _classify(session, _unsubmitted_result(session), score)
    return _classify(session, attempts.result or IterationResult.missing(), score)


def _classify(session: Session, result: IterationResult, score: Score) -> Outcome:
    if not score.gate_ok:
        return Outcome(OutcomeKind.GATE_FAILURE, result, score)
    if not score.improved and session.settings.require_improvement:
        return Outcome(OutcomeKind.NO_IMPROVEMENT, result, score)
    return Outcome(OutcomeKind.COMMIT, result, score)
