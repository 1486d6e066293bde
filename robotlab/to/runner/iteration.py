"""One iteration: a fresh robot in a child process, nudges, the eval, repairs in place.

Returns an ``Outcome``; the caller (``outcomes.apply``) commits or rolls back. Nothing
here touches git except through the eval's read-only look at the tree.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from robotlab.to.child.robot import AttemptReport, ChildPlan, RobotChild
from robotlab.to.evals.registry import is_scored
from robotlab.to.evals.score import Context, Score
from robotlab.to.guards.chain import GuardSettings
from robotlab.to.guards.grader_lock import GraderLock
from robotlab.to.guards.quality import correction_message
from robotlab.to.process.forked import describe_error
from robotlab.to.runner import prompt
from robotlab.to.runner.session import Session
from robotlab.to.runner.stop_conditions import tokens_exhausted
from robotlab.to.tools.submit import IterationResult


@dataclasses.dataclass
class Outcome:
    """How an iteration ended, before git is touched.

    ``kind`` is one of: failure, gate_failure, no_improvement, commit, tampered,
    interrupted, error, budget (the token budget ran out before the robot submitted).
    """

    kind: str
    result: IterationResult
    score: Score | None = None
    error: dict[str, Any] | None = None
    tampered: list[str] = dataclasses.field(default_factory=list)


def lock_for(s: Session) -> GraderLock:
    """The grader lock of this iteration: the eval's own files plus ``--protect-path``."""
    protected = list(s.evaluator.protected_paths()) if hasattr(s.evaluator, "protected_paths") else []
    return GraderLock(s.root, [*protected, *s.lock_patterns])


def _plan(s: Session, lock: GraderLock) -> ChildPlan:
    decisions = s.decisions.resolved() if s.settings.decisions_enabled else []
    inputs = prompt.PromptInputs(
        objective=s.run.objective, iteration=s.run.iteration, notes_path=s.run.notes_path,
        notes=s.notes.read(), files=s.git.tracked_files(), decisions=decisions,
        scored=is_scored(s.evaluator, s.settings), last_score_value=s.run.last_score_value,
        target=s.settings.eval_target, iterations_since_improvement=s.run.iterations_since_improvement,
        verify_command=s.settings.verify_command, decisions_enabled=s.settings.decisions_enabled,
        commit_failure=s.commit_failure, stop_when=s.settings.stop_when,
        locked=[p for p in lock.patterns],
    )
    guard = GuardSettings(s.root, s.settings.local_guards, s.settings.write_guard, f"{s.run.run_dir}/checkpoints")
    name = f"robot-to-{s.run.run_id}-{s.run.iteration}"
    return ChildPlan(name, prompt.system_prompt(inputs), s.model, guard, lock.patterns, s.settings.decisions_enabled,
                     remaining_tokens(s))


class Attempts:
    """Runs messages through the child; keeps the newest result; records tokens and decisions."""

    def __init__(self, s: Session, child: RobotChild) -> None:
        self.s = s
        self.child = child
        self.result: IterationResult | None = None
        self.corrections: list[str] = []

    def run(self, message: str) -> AttemptReport:
        """One robot run (first message, nudge or repair), within what is left of the token budget.

        The quality monitor's corrections from the previous run go in front of ``message``.
        """
        s = self.s
        s.log.event("agent:run:start", iteration=s.run.iteration)
        s.status.update(phase="robot")
        message, self.corrections = "\n\n".join([*self.corrections, message]), []
        report = self.child.run(message, remaining_tokens(s))
        s.log.event("agent:run:end", iteration=s.run.iteration)
        s.add_tokens(report.input_tokens, report.output_tokens)
        if report.result:
            self.result = IterationResult(**report.result)
        for request in report.decisions:
            self._record_decision(request)
        for reason in report.quality:
            s.log.event("quality:warning", iteration=s.run.iteration, reason=reason)
            self.corrections.append(correction_message(reason))
        if report.budget_stop:
            s.log.event("budget:stop", iteration=s.run.iteration, total_tokens=s.run.total_tokens)
        return report

    def _record_decision(self, request: dict[str, Any]) -> None:
        s = self.s
        decision = s.decisions.write(request, s.run.iteration)
        s.log.event("decision:raised", id=decision.id, blocking=decision.blocking, question=decision.question)
        s.notes.decision(s.run.iteration, decision.question, decision.blocking, decision.recommendation,
                         str(decision.path))

    def budget_left(self) -> bool:
        """False once a stop was requested or the token budget is spent."""
        return not self.s.stopping and not tokens_exhausted(self.s.run, self.s.settings)


def run_iteration(s: Session) -> Outcome:
    """Run one iteration up to (not including) commit or rollback."""
    lock = lock_for(s)
    before = lock.snapshot()
    timeout = s.settings.iteration_timeout
    # The deadline bounds everything the iteration forks: the robot's child and the judge's.
    s.watch.deadline = time.monotonic() + timeout if timeout else None
    child = RobotChild(_plan(s, lock), s.supervisor, s.watch)
    child.start()
    try:
        attempts = Attempts(s, child)
        first = _work(s, attempts)
        if first is not None:
            return first
        return _gate(s, attempts, lock, before)
    finally:
        child.close()
        s.watch.deadline = None


def remaining_tokens(s: Session) -> int | None:
    """What is left of ``--max-tokens`` (None without a limit)."""
    limit = s.settings.max_tokens
    return None if limit is None else max(limit - s.run.total_tokens, 0)


def _ended(report: AttemptReport, attempts: Attempts) -> Outcome | None:
    result = attempts.result or IterationResult.missing()
    if report.budget_stop and attempts.result is None:
        return Outcome("budget", result)
    if report.error is None:
        return None
    if report.error["class"] == "Interrupted":
        return Outcome("interrupted", result)
    return Outcome("error", result, error=report.error)


def _work(s: Session, attempts: Attempts) -> Outcome | None:
    """The first run and the nudges; an Outcome when the iteration ends before the eval."""
    ended = _ended(attempts.run(s.run.objective), attempts)
    if ended:
        return ended
    for attempt in range(1, s.settings.max_submit_nudges + 1):
        if attempts.result is not None or not attempts.budget_left():
            break
        s.log.event("agent:nudge", iteration=s.run.iteration, attempt=attempt)
        s.status.say(f"iteration {s.run.iteration}: no result submitted — nudging ({attempt}/{s.settings.max_submit_nudges})")
        ended = _ended(attempts.run(prompt.NUDGE), attempts)
        if ended:
            return ended
    result = attempts.result or IterationResult.missing()
    if s.stopping:
        return Outcome("interrupted", result)
    return None if result.success else Outcome("failure", result)


def evaluate(s: Session) -> Score:
    """Score the working tree against HEAD and log the ``eval`` event."""
    s.status.update(phase="eval")
    run = s.run
    context = Context(s.root, s.git.head_sha(), run.last_score_value, run.objective, run.iteration)
    score = s.evaluator.score(context)
    if not isinstance(score, Score):
        raise TypeError(f"eval returned {type(score).__name__}, not Score")
    s.add_tokens(score.input_tokens, score.output_tokens)
    s.log.event("eval", iteration=run.iteration, gate=score.gate_ok, improved=score.improved, value=score.value,
                met_target=score.met_target, detail=score.detail, judge_reply=score.reply)
    return score


def _gate(s: Session, attempts: Attempts, lock: GraderLock, before: dict[str, str | None]) -> Outcome:
    """Evaluate; repair in place while the gate fails; classify the result."""
    budget = s.settings.max_verify_repairs
    for attempt in range(budget + 1):
        result = attempts.result or IterationResult.missing()
        tampered = lock.changed(before)
        if tampered:
            return Outcome("tampered", result, tampered=tampered)
        try:
            score = evaluate(s)
        except Exception as exc:  # an eval failure takes the same retry path as a robot error
            if s.stopping:
                return Outcome("interrupted", result)
            return Outcome("error", result, error=describe_error(exc))
        if s.stopping:
            return Outcome("interrupted", result, score)
        if score.gate_ok or attempt == budget or not attempts.budget_left():
            break
        s.log.event("eval:repair", iteration=s.run.iteration, attempt=attempt + 1)
        s.status.say(f"iteration {s.run.iteration}: verification failed — repairing ({attempt + 1}/{budget})")
        report = attempts.run(prompt.repair_message(s.settings.verify_command, score.output))
        if report.error is not None:
            s.log.event("eval:repair_error", iteration=s.run.iteration, message=report.error["message"])
            if report.error["class"] == "Interrupted":
                return Outcome("interrupted", result, score)
            break
    return _classify(s, attempts.result or IterationResult.missing(), score)


def _classify(s: Session, result: IterationResult, score: Score) -> Outcome:
    if not score.gate_ok:
        return Outcome("gate_failure", result, score)
    if not score.improved and s.settings.require_improvement:
        return Outcome("no_improvement", result, score)
    return Outcome("commit", result, score)
