"""What the child and the gate report while they work, shown live and written to run.log.

The iteration's child sends events mid-attempt (``tool:call``, ``tool:result``, ``usage`` after
each model call, ``model:streaming`` while a reply streams, ``model:truncated`` when the
output-token limit cut one, ``model:retry``); the code eval reports each command it ran. Both
become ``run.log`` events and update the live view; a refused tool call and a failed verify are
also progress lines, with their why.
"""

from __future__ import annotations

from typing import Any

from robotlab.to.child.token_meter import add_cost
from robotlab.to.process.command import CommandResult
from robotlab.to.runner.session import Session

OUTPUT_TAIL_LINES = 15
OUTPUT_TAIL_CHARS = 2000


def output_tail(text: str | None) -> str:
    """The last lines of a command's output (where the failure usually is), clipped."""
    lines = (text or "").rstrip().splitlines()[-OUTPUT_TAIL_LINES:]
    return "\n".join(lines)[-OUTPUT_TAIL_CHARS:]


def truncation_line(limit: int | None) -> str:
    """The progress line for a reply the output-token limit cut, with how to raise it."""
    where = (f"at {limit} output tokens (--max-output-tokens)" if limit
             else "at the provider's own output limit")
    return f"a model reply was cut {where}; raise it with --max-output-tokens N (0: no cap)"


class ChildProgress:
    """Receives one attempt's events from the child process."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def __call__(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Log and show one event (unknown kinds are logged as they came); answer a ``crew:ask``."""
        session, kind = self.session, str(event.get("event"))
        iteration = session.run.iteration
        if kind == "crew:ask":
            return self._ask_crew(str(event.get("robot")), str(event.get("question")))
        if kind == "usage":
            estimated = bool(event.get("estimated")) or session.run.tokens_estimated
            self._show_usage(event, estimated=estimated)
            return None
        # ``name`` is the event's own name in the log, so the tool's name is logged as ``tool``.
        fields = {("tool" if key == "name" else key): value
                  for key, value in event.items() if key != "event"}
        session.log.event(kind, iteration=iteration, **fields)
        name, target = event.get("name", ""), event.get("target", "")
        if kind == "model:streaming":
            self._show_usage(event, estimated=True)
        elif kind == "model:truncated":
            session.run.count_truncated(event.get("max_tokens"))
            session.status.say(f"iteration {iteration}: {truncation_line(event.get('max_tokens'))}")
        elif kind == "model:retry":
            self._show_retry(event)
        elif kind == "tool:call":
            session.status.update(activity=f"{name} {target}".strip())
        elif kind == "tool:result" and event.get("outcome") == "refused":
            session.status.say(f"iteration {iteration}: refused {name} {target}: "
                               f"{event.get('reason')}")
        return None

    def _show_usage(self, event: dict[str, Any], *, estimated: bool) -> None:
        """The run's tokens and dollars so far on the live line; ``estimated`` while a reply
        streams."""
        run = self.session.run
        tokens = (run.total_tokens + int(event.get("input_tokens") or 0)
                  + int(event.get("output_tokens") or 0))
        self.session.status.update(tokens=tokens, cost=add_cost(run.cost_usd, event.get("cost")),
                                   estimated=estimated)

    def _show_retry(self, event: dict[str, Any]) -> None:
        session, iteration = self.session, self.session.run.iteration
        left = event.get("deadline_left")
        within = f", {left:g}s left of the call's deadline" if isinstance(left, int | float) else ""
        cause = str(event.get("cause")).replace("_", " ")
        session.status.say(f"iteration {iteration}: model call failed ({cause} error) — retry "
                           f"{event.get('attempt')}/{event.get('of')} in "
                           f"{float(event.get('wait') or 0):g}s{within}")
        session.status.update(activity=f"model retry {event.get('attempt')}/{event.get('of')}")

    def _ask_crew(self, robot: str, question: str) -> dict[str, Any]:
        session = self.session
        session.log.event("crew:ask", iteration=session.run.iteration, robot=robot,
                          question=question[:500])
        session.status.update(activity=f"asking {robot}")
        if session.ask_crew is None:
            return {"error": "not on the bus"}
        try:
            answer = session.ask_crew(robot, question)
        except Exception as exc:  # the crew's failure goes back to the robot as text
            session.log.event("crew:answer", iteration=session.run.iteration, robot=robot,
                              error=str(exc))
            return {"error": str(exc)}
        session.log.event("crew:answer", iteration=session.run.iteration, robot=robot,
                          answer=answer[:500])
        return {"answer": answer}


def command_reporter(session: Session) -> Any:
    """The eval's ``on_command``: one ``verify:run`` event per gate command, and the tail on
    failure."""

    def report(kind: str, command: str, result: CommandResult, seconds: float) -> None:
        iteration = session.run.iteration
        tail = output_tail(result.output)
        session.log.event("verify:run", iteration=iteration, kind=kind, command=command,
                          exit_code=result.status, passed=result.passed,
                          timed_out=result.timed_out, seconds=round(seconds, 2), output_tail=tail)
        if not result.passed:
            why = "timed out" if result.timed_out else f"exited {result.status}"
            session.status.say(f"iteration {iteration}: {kind} `{command}` {why} after "
                               f"{seconds:.1f}s:\n{tail}")
        else:
            session.status.update(activity=f"{kind} passed ({seconds:.1f}s)")

    return report
