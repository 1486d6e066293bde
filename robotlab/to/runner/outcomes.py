"""What each iteration outcome does to git, the notes, the counters and the event log.

| outcome        | git              | consecutive failures | since improvement | rolled back |
| commit         | commit           | 0                    | 0 (+1 unimproved) | unchanged   |
| no change      | (nothing staged) | unchanged            | +1                | unchanged   |
| commit failed  | kept for repair  | +1                   | 0                 | unchanged   |
| no improvement | rollback         | unchanged            | +1                | +1          |
| gate failure   | rollback         | +1                   | +1                | +1          |
| tampered       | rollback         | +1                   | +1                | +1          |
| failure        | rollback         | +1                   | +1                | +1          |
(a robot that never submitted but changed files goes to the gate as a commit or gate failure)
| error, final   | rollback         | +1                   | +1                | +1          |
| interrupted    | rollback         | unchanged            | unchanged         | +1          |
| budget         | rollback         | unchanged            | unchanged         | +1          |

The counters count iterations, not attempts: an error that is retried (``loop.py``) only adds
to ``consecutive_errors``; the iteration is counted once, by the outcome it finally has. A
rollback skipped because a failed commit awaits repair does not count as one.
"""

from __future__ import annotations

from robotlab.errors import CommitFailedError, StopRun
from robotlab.to.process.failure import Failure
from robotlab.to.runner.outcome_types import Outcome, OutcomeKind
from robotlab.to.runner.session import Session
from robotlab.to.tools.submit import IterationResult


def _failed(session: Session) -> None:
    session.run.consecutive_failures += 1
    session.run.consecutive_errors = 0
    session.run.iterations_since_improvement += 1


def _roll_back(session: Session, outcome: Outcome) -> None:
    """Throw the iteration's work away and count it as rolled back.

    A locked grader file's change goes even while a failed commit awaits repair.
    """
    if outcome.kind == OutcomeKind.TAMPERED:
        session.git.reset_hard()
    elif not session.rollback():
        return
    session.run.rolled_back += 1


def errored(session: Session, error: Failure) -> None:
    """An error the run does not retry ended the iteration: one failure, rolled back.

    The caller has already rolled the attempt back (``session.rollback``) and counted the
    error in ``consecutive_errors``.
    """
    run = session.run
    session.notes.error(run.iteration, error.error_class, error.message)
    run.consecutive_failures += 1
    run.iterations_since_improvement += 1
    if session.commit_failure is None:
        run.rolled_back += 1


def apply(session: Session, outcome: Outcome) -> None:
    """Act on ``outcome``; raises StopRun when a committing iteration meets the target or stop
    condition."""
    n, result = session.run.iteration, outcome.result
    if outcome.kind == OutcomeKind.COMMIT and session.stopping:
        outcome.kind = OutcomeKind.INTERRUPTED  # nothing commits after a signal
    if outcome.kind == OutcomeKind.COMMIT:
        _commit_path(session, outcome)
        return
    _roll_back(session, outcome)
    if outcome.kind == OutcomeKind.INTERRUPTED:
        session.notes.interrupted(n, session.signal_name or "a signal")
        session.log.event("iteration:interrupted", iteration=n)
        session.status.say(f"iteration {n} interrupted — rolled back")
    elif outcome.kind == OutcomeKind.BUDGET:
        session.notes.budget_stop(n, session.run.total_tokens)
        session.log.event("iteration:budget_stop", iteration=n)
        session.status.say(f"iteration {n} stopped by the token budget before submitting — "
                           "rolled back")
    elif outcome.kind == OutcomeKind.NO_IMPROVEMENT:
        detail = outcome.score.detail if outcome.score else ""
        session.notes.no_improvement(n, result.summary, detail)
        session.run.iterations_since_improvement += 1
        session.run.consecutive_errors = 0
        session.log.event("iteration:no_improvement", iteration=n, detail=detail)
        session.status.say(f"iteration {n} no improvement ({detail}) — rolled back")
    else:
        _failure(session, outcome)


def _failure(session: Session, outcome: Outcome) -> None:
    n, result = session.run.iteration, outcome.result
    _failed(session)
    if outcome.kind == OutcomeKind.GATE_FAILURE:
        session.notes.verify_failed(n, result.summary,
                                    outcome.score.output if outcome.score else None)
        session.log.event("iteration:gate_failure", iteration=n)
        session.status.say(f"iteration {n} verification failed — rolled back")
    elif outcome.kind == OutcomeKind.TAMPERED:
        session.notes.grader_tampered(n, result.summary, outcome.tampered)
        session.log.event("iteration:grader_lock", iteration=n, paths=outcome.tampered)
        session.status.say(f"iteration {n} changed locked grader files "
                           f"({', '.join(outcome.tampered)}) — rolled back")
    else:
        session.notes.failure(n, result.summary, result.key_learnings)
        session.log.event("iteration:failure", iteration=n, summary=result.summary)
        session.status.say(f"iteration {n} failed: {result.summary}")


def commit_message(session: Session, result: IterationResult) -> str:
    """``robot-to <n>: <summary>``, or ``<type>(<scope>): <summary>`` for conventional commits."""
    summary = ((result.summary.splitlines() or [""])[0].strip()
               or f"iteration {session.run.iteration}")
    if session.settings.commit_format != "conventional":
        return f"robot-to {session.run.iteration}: {summary}"
    kind = (result.type or "chore").strip().lower()
    return f"{kind}({result.scope.strip()}): {summary}" if result.scope else f"{kind}: {summary}"


def _commit_path(session: Session, outcome: Outcome) -> None:
    n, result, score = session.run.iteration, outcome.result, outcome.score
    session.status.update(phase="commit")
    session.git.add_all()
    staged = session.git.staged()
    # The files come from git, not from the robot's own account of its changes.
    files = session.git.staged_files() if staged else []
    session.notes.success(n, result.summary, result.key_changes, result.key_learnings, files)
    if not staged:
        session.run.no_change += 1
        session.run.iterations_since_improvement += 1
        session.run.consecutive_errors = 0
        session.log.event("commit:no_change", iteration=n)
        session.status.say(f"iteration {n}: success claimed but nothing changed — no commit")
    elif not _commit(session, commit_message(session, result), score is None or score.improved):
        return
    elif score is not None and score.value is not None:
        session.run.record_score(score.value)
    if score is not None and score.met_target:
        raise StopRun(f"target met: {score.detail}")
    if result.should_fully_stop and session.settings.stop_when:
        raise StopRun(f"stop condition met: {session.settings.stop_when}")
    if result.should_fully_stop:  # only --stop-when gives the robot a say in when the run ends
        session.log.event("stop:ignored", iteration=n,
                          reason="should_fully_stop without --stop-when")
        session.status.say(f"iteration {n}: the robot asked to stop; the run goes on (only "
                           "--stop-when lets the robot end it)")


def _commit(session: Session, message: str, improved: bool) -> bool:
    n, run = session.run.iteration, session.run
    try:
        session.git.commit(message)
    except CommitFailedError as exc:
        session.commit_failure = exc.output
        run.consecutive_failures += 1
        run.consecutive_errors = 0
        session.log.event("commit:failed", iteration=n, output=exc.output)
        session.status.say(f"iteration {n} commit failed — queued for repair")
        return False
    run.commits += 1
    session.commit_failure = None
    run.consecutive_failures = run.consecutive_errors = 0
    # A commit that did not beat the best score (--no-require-improvement) is no progress
    # toward --stop-on-plateau: a measure that cannot rise must still end the run.
    run.iterations_since_improvement = 0 if improved else run.iterations_since_improvement + 1
    session.log.event("commit:success", iteration=n, message=message)
    session.status.say(f"iteration {n} committed: {message}")
    for decision in session.decisions.resolved():
        session.decisions.close(decision)
    return True
