"""What each iteration outcome does to git, the notes, the counters and the event log.

| outcome        | git              | consecutive failures | since improvement |
| commit         | commit           | 0                    | 0                 |
| no change      | (nothing staged) | unchanged            | +1                |
| commit failed  | kept for repair  | +1                   | 0                 |
| no improvement | rollback         | unchanged            | +1                |
| gate failure   | rollback         | +1                   | +1                |
| tampered       | rollback         | +1                   | +1                |
| failure        | rollback         | +1                   | +1                |
| interrupted    | rollback         | unchanged            | unchanged         |
| budget         | rollback         | unchanged            | unchanged         |
"""

from __future__ import annotations

from robotlab.errors import CommitFailedError, StopRun
from robotlab.to.runner.iteration import Outcome
from robotlab.to.runner.session import Session
from robotlab.to.tools.submit import IterationResult


def _failed(s: Session) -> None:
    s.run.consecutive_failures += 1
    s.run.consecutive_errors = 0
    s.run.iterations_since_improvement += 1


def apply(s: Session, outcome: Outcome) -> None:
    """Act on ``outcome``; raises StopRun when a committing iteration meets the target or stop condition."""
    n, result = s.run.iteration, outcome.result
    if outcome.kind == "commit" and s.stopping:
        outcome.kind = "interrupted"  # nothing commits after a signal
    if outcome.kind == "commit":
        _commit_path(s, outcome)
        return
    s.rollback() if outcome.kind != "tampered" else s.git.reset_hard()
    if outcome.kind == "interrupted":
        s.notes.interrupted(n, s.signal_name or "a signal")
        s.log.event("iteration:interrupted", iteration=n)
        s.status.say(f"iteration {n} interrupted — rolled back")
    elif outcome.kind == "budget":
        s.notes.budget_stop(n, s.run.total_tokens)
        s.log.event("iteration:budget_stop", iteration=n)
        s.status.say(f"iteration {n} stopped by the token budget before submitting — rolled back")
    elif outcome.kind == "no_improvement":
        detail = outcome.score.detail if outcome.score else ""
        s.notes.no_improvement(n, result.summary, detail)
        s.run.iterations_since_improvement += 1
        s.run.consecutive_errors = 0
        s.log.event("iteration:no_improvement", iteration=n, detail=detail)
        s.status.say(f"iteration {n} no improvement ({detail}) — rolled back")
    else:
        _failure(s, outcome)


def _failure(s: Session, outcome: Outcome) -> None:
    n, result = s.run.iteration, outcome.result
    _failed(s)
    if outcome.kind == "gate_failure":
        s.notes.verify_failed(n, result.summary, outcome.score.output if outcome.score else None)
        s.log.event("iteration:gate_failure", iteration=n)
        s.status.say(f"iteration {n} verification failed — rolled back")
    elif outcome.kind == "tampered":
        s.notes.grader_tampered(n, result.summary, outcome.tampered)
        s.log.event("iteration:grader_lock", iteration=n, paths=outcome.tampered)
        s.status.say(f"iteration {n} changed locked grader files ({', '.join(outcome.tampered)}) — rolled back")
    else:
        s.notes.failure(n, result.summary, result.key_learnings)
        s.log.event("iteration:failure", iteration=n, summary=result.summary)
        s.status.say(f"iteration {n} failed: {result.summary}")


def commit_message(s: Session, result: IterationResult) -> str:
    """``robot-to <n>: <summary>``, or ``<type>(<scope>): <summary>`` for conventional commits."""
    summary = (result.summary.splitlines() or [""])[0].strip() or f"iteration {s.run.iteration}"
    if s.settings.commit_format != "conventional":
        return f"robot-to {s.run.iteration}: {summary}"
    kind = (result.type or "chore").strip().lower()
    return f"{kind}({result.scope.strip()}): {summary}" if result.scope else f"{kind}: {summary}"


def _commit_path(s: Session, outcome: Outcome) -> None:
    n, result, score = s.run.iteration, outcome.result, outcome.score
    s.notes.success(n, result.summary, result.key_changes, result.key_learnings)
    s.status.update(phase="commit")
    s.git.add_all()
    if not s.git.staged():
        s.run.no_change += 1
        s.run.iterations_since_improvement += 1
        s.run.consecutive_errors = 0
        s.log.event("commit:no_change", iteration=n)
        s.status.say(f"iteration {n}: success claimed but nothing changed — no commit")
    elif not _commit(s, commit_message(s, result)):
        return
    elif score is not None and score.value is not None:
        s.run.last_score_value = score.value
    if score is not None and score.met_target:
        raise StopRun(f"target met: {score.detail}")
    if s.settings.stop_when and result.should_fully_stop:
        raise StopRun(f"stop condition met: {s.settings.stop_when}")


def _commit(s: Session, message: str) -> bool:
    n, run = s.run.iteration, s.run
    try:
        s.git.commit(message)
    except CommitFailedError as exc:
        s.commit_failure = exc.output
        run.consecutive_failures += 1
        run.consecutive_errors = 0
        s.log.event("commit:failed", iteration=n, output=exc.output)
        s.status.say(f"iteration {n} commit failed — queued for repair")
        return False
    run.commits += 1
    s.commit_failure = None
    run.iterations_since_improvement = run.consecutive_failures = run.consecutive_errors = 0
    s.log.event("commit:success", iteration=n, message=message)
    s.status.say(f"iteration {n} committed: {message}")
    for decision in s.decisions.resolved():
        s.decisions.close(decision)
    return True
