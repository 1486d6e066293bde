"""The iteration loop: run the robot, gate, commit or roll back, check the stop conditions.

It ends only by raising: ``StopRun`` (a stop condition), ``PermanentError``, or any
other error (fatal); or by returning once a signal asked it to stop.
"""

from __future__ import annotations

import time

from robotlab.errors import PermanentError, ToError
from robotlab.observability import spans
from robotlab.to.process.failure import Cause, Failure
from robotlab.to.runner import outcomes
from robotlab.to.runner.decision_wait import wait_for_decisions
from robotlab.to.runner.iteration import run_iteration
from robotlab.to.runner.outcome_types import Outcome, OutcomeKind
from robotlab.to.runner.preflight import explain
from robotlab.to.runner.session import Session
from robotlab.to.runner.stop_conditions import check_after, check_limits, check_target

# Off a terminal there is no live countdown; a line this often says that the run is still waiting.
WAIT_REMINDER_SECONDS = 30.0


def run_loop(session: Session) -> None:
    """Iterate until a stop condition raises or a signal stops the run (one ``robot-to`` span
    when traced)."""
    run, settings = session.run, session.settings
    attributes = {"robotlab.run.id": run.run_id, "gen_ai.request.model": settings.model,
                  "robotlab.branch": run.branch, "robotlab.objective": run.objective[:200]}
    with spans.step(f"robot-to {run.run_id}", attributes) as span:
        try:
            _iterate(session)
        finally:
            spans.annotate(span, {"robotlab.iterations": run.iteration,
                                  "robotlab.commits": run.commits,
                                  "gen_ai.usage.input_tokens": run.input_tokens,
                                  "gen_ai.usage.output_tokens": run.output_tokens,
                                  "robotlab.cost.usd": run.cost_usd})


def _iterate(session: Session) -> None:
    check_target(session.run, session.settings)
    while not session.stopping:
        wait_for_decisions(session)
        if session.stopping:
            return
        check_limits(session.run, session.settings)
        session.run.iteration += 1
        session.log.event("iteration:start", iteration=session.run.iteration)
        session.status.update(iteration=session.run.iteration, phase="robot")
        session.status.say(f"iteration {session.run.iteration} ({session.settings.model})...")
        spent = (session.run.total_tokens, session.run.cost_usd)
        # The iteration's child is forked inside this span, so its robot's spans are children of it.
        attributes = {"robotlab.iteration": session.run.iteration}
        with spans.step(f"iteration {session.run.iteration}", attributes) as span:
            outcome = run_with_retries(session)
            try:
                outcomes.apply(session, outcome)
            finally:
                _log_spending(session, outcome, spent)
                session.save()
                spans.annotate(span, {"robotlab.iteration.outcome": str(outcome.kind),
                                      "robotlab.tokens": session.run.total_tokens - spent[0]})
        if outcome.kind == OutcomeKind.INTERRUPTED:
            return
        check_after(session.run, session.settings)


def _log_spending(session: Session, outcome: Outcome, before: tuple[int, float | None]) -> None:
    """``iteration:end``: how the iteration ended and what it spent (``cost_usd`` "unknown" when
    unpriced)."""
    run = session.run
    tokens, cost = before
    spent = None if run.cost_usd is None or cost is None else round(run.cost_usd - cost, 6)
    session.log.event("iteration:end", iteration=run.iteration, outcome=str(outcome.kind),
                      tokens=run.total_tokens - tokens,
                      cost_usd="unknown" if spent is None else spent,
                      total_cost_usd="unknown" if run.cost_usd is None else round(run.cost_usd, 6))


def run_with_retries(session: Session) -> Outcome:
    """Run the iteration; after a transient error, back off and retry the same iteration number.

    A permanent error (authentication, DNS, model not found, a 4xx other than 408 and 429,
    a refused connection before the model ever answered) ends the run at once: waiting
    cannot fix it.
    """
    while True:
        outcome = run_iteration(session)
        if outcome.kind != OutcomeKind.ERROR or outcome.error is None:
            return outcome
        error = outcome.error
        _record_error(session, error)
        if error.permanent or _never_reached(session, error):
            outcomes.errored(session, error)
            prefix = "API authentication failed: " if error.auth else ""
            raise PermanentError(prefix + explain(error, session.settings))
        if session.run.consecutive_errors > session.settings.max_retries:
            outcomes.errored(session, error)
            raise ToError(error.message)
        session.notes.retry(error.error_class, error.message)
        if session.stopping:
            return Outcome(OutcomeKind.INTERRUPTED, outcome.result)
        _back_off(session, error)
        if session.stopping:
            return Outcome(OutcomeKind.INTERRUPTED, outcome.result)


def _never_reached(session: Session, error: Failure) -> bool:
    """A refused connection to a model that has not answered once in this process (no preflight,
    no usage yet): most likely a wrong ``--api-base`` or a server not started, which waiting
    will not fix. Once the model has answered, a refused connection is a restart and is retried."""
    return error.cause == Cause.CONNECTION and not session.model_answered


def _back_off(session: Session, error: Failure) -> None:
    """Wait before retrying, counting down on the live line (or a line every 30 s off a
    terminal)."""
    run = session.run
    seconds = session.backoff.delay(run.consecutive_errors, error.retry_after)
    retry = f"retry {run.consecutive_errors}/{session.settings.max_retries}"
    session.log.event("backoff:start", consecutive_errors=run.consecutive_errors, seconds=seconds,
                      cause=str(error.cause))
    session.status.say(f"iteration {run.iteration}: {error.cause.replace('_', ' ')} error — "
                       f"{retry} in {seconds:g}s (Ctrl-C stops the run)")
    end = time.monotonic() + seconds
    session.status.update(phase=retry, wait_until=end)
    while (left := end - time.monotonic()) > 0:
        if not session.backoff.sleep_seconds(min(left, WAIT_REMINDER_SECONDS)):
            break
        left = end - time.monotonic()
        if left >= 1 and not session.status.live_enabled:
            session.status.say(f"iteration {run.iteration}: still waiting — {retry} in {left:.0f}s "
                               "(Ctrl-C stops the run)")
    session.status.update(phase="robot")
    session.log.event("backoff:end")


def _record_error(session: Session, error: Failure) -> None:
    """Log the attempt's error and roll the attempt back.

    Only ``consecutive_errors`` counts it: the iteration is not over yet, and whatever it
    finally ends as counts once toward ``--max-consecutive-failures`` and the plateau.
    """
    run = session.run
    session.log.event("agent:run:error", iteration=run.iteration, error=error.error_class,
                      message=error.message, cause=str(error.cause), permanent=error.permanent)
    session.rollback()
    run.consecutive_errors += 1
    session.status.say(f"iteration {run.iteration} error: {error.error_class}: {error.message}")
