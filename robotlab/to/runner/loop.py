"""The iteration loop: run the robot, gate, commit or roll back, check the stop conditions.

It ends only by raising: ``StopRun`` (a stop condition), ``PermanentError``, or any
other error (fatal); or by returning once a signal asked it to stop.
"""

from __future__ import annotations

from robotlab.errors import PermanentError, ToError
from robotlab.to.runner import outcomes
from robotlab.to.runner.decision_wait import wait_for_decisions
from robotlab.to.runner.iteration import Outcome, run_iteration
from robotlab.to.runner.session import Session
from robotlab.to.runner.stop_conditions import check_after, check_limits


def run_loop(s: Session) -> None:
    """Iterate until a stop condition raises or a signal stops the run."""
    while not s.stopping:
        wait_for_decisions(s)
        if s.stopping:
            return
        check_limits(s.run, s.settings)
        s.run.iteration += 1
        s.log.event("iteration:start", iteration=s.run.iteration)
        s.status.update(iteration=s.run.iteration, phase="robot")
        s.status.say(f"iteration {s.run.iteration} ({s.settings.model})...")
        outcome = run_with_retries(s)
        try:
            outcomes.apply(s, outcome)
        finally:
            s.save()
        if outcome.kind == "interrupted":
            return
        check_after(s.run, s.settings)


def run_with_retries(s: Session) -> Outcome:
    """Run the iteration; after an error, back off and retry the same iteration number."""
    while True:
        outcome = run_iteration(s)
        if outcome.kind != "error" or outcome.error is None:
            return outcome
        error = outcome.error
        if error.get("auth"):
            raise PermanentError(f"API authentication failed: {error['message']}")
        _record_error(s, error)
        if s.run.consecutive_errors > s.settings.max_retries:
            raise ToError(error["message"])
        if s.stopping:
            return Outcome("interrupted", outcome.result)
        s.log.event("backoff:start", consecutive_errors=s.run.consecutive_errors)
        s.status.update(phase="backoff")
        s.backoff.sleep_for(s.run.consecutive_errors, error.get("retry_after"))
        s.log.event("backoff:end")
        if s.stopping:
            return Outcome("interrupted", outcome.result)


def _record_error(s: Session, error: dict[str, object]) -> None:
    run = s.run
    s.log.event("agent:run:error", iteration=run.iteration, error=error["class"], message=error["message"])
    s.rollback()
    s.notes.error(run.iteration, str(error["class"]), str(error["message"]))
    run.consecutive_failures += 1
    run.consecutive_errors += 1
    run.iterations_since_improvement += 1
    s.status.say(f"iteration {run.iteration} error: {error['class']}: {error['message']}")

