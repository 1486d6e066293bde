"""Pausing the loop on blocking decisions: wait for a human (poll) or exit to be resumed."""

from __future__ import annotations

import time

from robotlab.errors import RunExit, StopRun
from robotlab.to.runner.session import Session


def wait_for_decisions(session: Session) -> None:
    """Return when nothing blocks (or a stop was requested); raise StopRun to pause."""
    if not session.settings.decisions_enabled:
        return
    blocking = session.decisions.blocking()
    if not blocking:
        return
    mode = session.settings.decision_mode
    session.log.event("decision:blocking", count=len(blocking), mode=mode)
    paths = "\n".join(f"  {d.path}" for d in blocking)
    if mode == "exit":
        session.save()
        raise StopRun(f"awaiting human decision — resolve then resume:\n{paths}\n"
                      f"  robot-to --resume {session.run.run_id}")
    timeout = session.settings.decision_timeout
    until = None if timeout is None else round(time.time() + timeout, 3)
    session.status.say(f"awaiting human decision on {len(blocking)} item(s)"
                       f"{_whom_and_until(session.settings.ask, until)}:\n{paths}")
    # one update: whoever reads the status sees the phase with whom it waits for, never apart
    # (the live line counts the wait up and its deadline down; the web console reads the same)
    session.status.update(phase="awaiting decision", decision_until=until,
                          decision_since=time.time(), decision_from=session.settings.ask)
    session.log.event("decision:wait:start", count=len(blocking))
    _poll(session)


def _whom_and_until(person: str | None, until: float | None) -> str:
    """`` from alice on the bus, until 14:05:31``: whom the run waits for, and until when."""
    whom = f" from {person} on the bus" if person else ""
    if until is None:
        return f"{whom}, with no deadline"
    return f"{whom}, until {time.strftime('%H:%M:%S', time.localtime(until))}"


def _poll(session: Session) -> None:
    timeout = session.settings.decision_timeout
    deadline = time.monotonic() + timeout if timeout is not None else None
    try:
        _wait(session, timeout, deadline)
    finally:
        session.status.update(decision_until=None, decision_since=None, decision_from=None)


def _wait(session: Session, timeout: float | None, deadline: float | None) -> None:
    while True:
        poll = session.settings.decision_wait_poll
        if not session.backoff.sleep_seconds(poll) or session.stopping:
            return
        if not session.decisions.blocking():
            session.log.event("decision:wait:resolved")
            session.status.say("decision resolved — resuming")
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise StopRun(f"awaiting human decision (timed out after {timeout:g}s)",
                          exit_code=RunExit.ABORTED)
