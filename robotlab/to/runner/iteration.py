"""One iteration: a fresh robot in a child process, nudges, the eval, repairs in place (the
tool-call edit format; ``whole_file`` runs the whole-file one).

Returns an ``Outcome``; the caller (``outcomes.apply``) commits or rolls back. Nothing
here touches git except through the eval's read-only look at the tree.
"""

from __future__ import annotations

import time

from robotlab.to.child.robot import ChildPlan, RobotChild
from robotlab.to.evals.registry import is_scored
from robotlab.to.guards.chain import GuardSettings
from robotlab.to.guards.grader_lock import GraderLock
from robotlab.to.process.failure import describe_error
from robotlab.to.runner import prompt, whole_file
from robotlab.to.runner.attempts import Attempts, ended, remaining_tokens
from robotlab.to.runner.outcome_types import Outcome, OutcomeKind
from robotlab.to.runner.session import Session
from robotlab.to.runner.verdict import classify, evaluate, unsubmitted_result
from robotlab.to.tools.submit import IterationResult


def lock_for(session: Session) -> GraderLock:
    """The grader lock of this iteration: the eval's own files plus ``--protect-path``."""
    evaluator = session.evaluator
    protected = list(evaluator.protected_paths()) if hasattr(evaluator, "protected_paths") else []
    return GraderLock(session.root, [*protected, *session.lock_patterns])


def _plan(session: Session, lock: GraderLock) -> ChildPlan:
    decisions = session.decisions.resolved() if session.settings.decisions_enabled else []
    files = session.git.tracked_files()
    texts = prompt.small_project(session.root, files) if session.settings.local_guards else {}
    inputs = prompt.PromptInputs(
        objective=session.run.objective, iteration=session.run.iteration,
        notes_path=session.run.notes_path, notes=session.notes.read(), files=files,
        decisions=decisions, scored=is_scored(session.evaluator, session.settings),
        last_score_value=session.run.best_score_value, target=session.settings.eval_target,
        iterations_since_improvement=session.run.iterations_since_improvement,
        verify_command=session.settings.verify_command,
        decisions_enabled=session.settings.decisions_enabled,
        commit_failure=session.commit_failure, stop_when=session.settings.stop_when,
        locked=[p for p in lock.patterns], file_texts=texts,
        local_tools=session.settings.local_guards,
    )
    guard = GuardSettings(session.root, session.settings.local_guards, session.settings.write_guard,
                          f"{session.run.run_dir}/checkpoints", shown=tuple(texts))
    name = f"robot-to-{session.run.run_id}-{session.run.iteration}"
    crew = tuple(session.settings.crew) if session.ask_crew is not None else ()
    whole = session.settings.edit_format == "whole"
    system = whole_file.SYSTEM_PROMPT if whole else prompt.system_prompt(inputs)
    return ChildPlan(name, system, session.model, guard, lock.patterns,
                     session.settings.decisions_enabled, remaining_tokens(session), crew,
                     session.settings.edit_format)


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
        if session.settings.edit_format == "whole":
            return whole_file.run_attempts(session, attempts, lock, before)
        first = _work(session, attempts)
        if first is not None:
            return first
        return _gate(session, attempts, lock, before)
    finally:
        child.close()
        session.watch.deadline = None


def _work(session: Session, attempts: Attempts) -> Outcome | None:
    """The first run and the nudges; an Outcome when the iteration ends before the eval."""
    over = ended(attempts.run(session.run.objective), attempts)
    if over:
        return over
    for attempt in range(1, session.settings.max_submit_nudges + 1):
        if attempts.result is not None or not attempts.budget_left():
            break
        session.log.event("agent:nudge", iteration=session.run.iteration, attempt=attempt)
        session.status.say(f"iteration {session.run.iteration}: no result submitted — nudging "
                           f"({attempt}/{session.settings.max_submit_nudges})")
        over = ended(attempts.run(prompt.NUDGE), attempts)
        if over:
            return over
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


def _gate(session: Session, attempts: Attempts, lock: GraderLock,
          before: dict[str, str | None]) -> Outcome:
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
        session.log.event("eval:repair", iteration=session.run.iteration, attempt=attempt + 1,
                          reason=score.detail)
        session.status.say(f"iteration {session.run.iteration}: verification failed "
                           f"({score.detail}) — repairing ({attempt + 1}/{budget})")
        report = attempts.run(prompt.repair_message(session.settings.verify_command, score.output))
        if report.error is not None:
            session.log.event("eval:repair_error", iteration=session.run.iteration,
                              message=report.error.message)
            if report.error.is_interrupt:
                return Outcome(OutcomeKind.INTERRUPTED, result, score)
            break
    if attempts.result is None and attempts.unsubmitted and score.gate_ok:
        return classify(session, unsubmitted_result(session), score)
    return classify(session, attempts.result or IterationResult.missing(), score)


