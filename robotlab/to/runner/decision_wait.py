"""Pausing the loop on blocking decisions: wait for a human (poll) or exit to be resumed."""

from __future__ import annotations

import time

from robotlab.errors import RunExit, StopRun
from robotlab.to.runner.session import Session


def wait_for_decisions(s: Session) -> None:
    """Return when nothing blocks (or a stop was requested); raise StopRun to pause."""
    if not s.settings.decisions_enabled:
        return
    blocking = s.decisions.blocking()
    if not blocking:
        return
    mode = s.settings.decision_mode
    s.log.event("decision:blocking", count=len(blocking), mode=mode)
    paths = "\n".join(f"  {d.path}" for d in blocking)
    if mode == "exit":
        s.save()
        raise StopRun(f"awaiting human decision — resolve then resume:\n{paths}\n  robot-to --resume {s.run.run_id}")
    s.status.say(f"awaiting human decision on {len(blocking)} item(s):\n{paths}")
    s.status.update(phase="awaiting decision")
    s.log.event("decision:wait:start", count=len(blocking))
    _poll(s)


def _poll(s: Session) -> None:
    timeout = s.settings.decision_timeout
    deadline = time.monotonic() + timeout if timeout is not None else None
    while True:
        if not s.backoff.sleep_seconds(s.settings.decision_wait_poll) or s.stopping:
            return
        if not s.decisions.blocking():
            s.log.event("decision:wait:resolved")
            s.status.say("decision resolved — resuming")
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise StopRun(f"awaiting human decision (timed out after {timeout:g}s)", exit_code=RunExit.ABORTED)
