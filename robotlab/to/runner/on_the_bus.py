"""The run as a member of the crew (``--broker URL``): it answers ``status`` and ``decide``.

The run joins the bus under its run id, as a robot, so ``robotlab ps`` lists it and any
client can ask it::

    robotlab send --to <run id> status --wait           # the live state, as JSON
    robotlab send --to <run id> "decide <decision id> <answer>" --wait

With ``--ask NAME`` each decision the robot raises is also sent to that person on the bus
(``robotlab human --name NAME``), and her answer resolves it as ``decide`` would.
Messages are answered on the bus client's dispatcher thread; they only read the live state
and write decision files, which the loop polls. Tools and gates still act only on the local
worktree.
"""

from __future__ import annotations

import dataclasses
import json
import time
from concurrent.futures import Future
from typing import Any

from robotlab import bus
from robotlab.robot.human import ask_human
from robotlab.to.evals.prose import JudgeReply
from robotlab.to.runner.session import Session

USAGE = "send `status`, or `decide <decision id> <answer>`"
ASK_TIMEOUT = 300.0
"""Seconds a crew member may take to answer ``ask_crew`` when no --iteration-timeout is set."""
DECISION_ASK_TIMEOUT = 24 * 3600.0
"""Seconds a person asked by ``--ask`` has to answer a decision when no --decision-timeout is
set."""


class RunOnBus:
    """The bus membership of one run."""

    def __init__(self, session: Session, url: str) -> None:
        self.session = session
        self.url = url
        self.client: bus.BusClient | None = None
        self.asked: dict[str, dict[str, Any]] = {}
        """Decisions sent to the person (``--ask``), by id: whom, and until when (epoch seconds)."""

    @property
    def name(self) -> str:
        """The member name: the run id."""
        return self.session.run.run_id

    def start(self, timeout: float = 5.0) -> RunOnBus:
        """Join the bus (raises ``PeerUnavailable`` when no broker answers within ``timeout``)."""
        self.client = bus.connect(self.url, name=self.name, role="robot", timeout=timeout)
        self.client.on_message(self.answer)
        self.client.stats.source = self.stats  # `robotlab ps` and `top` show it
        self.session.log.event("bus:joined", url=self.url, member=self.name)
        return self

    def ask(self, robot: str, question: str) -> str:
        """Ask a served robot a question for the iteration's ``ask_crew`` tool; its answer as
        text."""
        assert self.client is not None
        timeout = self.session.settings.iteration_timeout or ASK_TIMEOUT
        answer = self.client.request(robot, question, timeout=timeout).content
        return answer if isinstance(answer, str) else json.dumps(answer)

    def ask_human(self, decision_id: str, request: dict[str, Any]) -> None:
        """Send a decision to the person ``--ask`` names; her answer resolves it when it comes."""
        assert self.client is not None
        person = str(self.session.settings.ask)
        timeout = self.session.settings.decision_timeout or DECISION_ASK_TIMEOUT
        self.asked[decision_id] = {"person": person, "until": round(time.time() + timeout, 3)}
        answer = ask_human(self.client, person, _question(decision_id, request), timeout=timeout)
        self.session.log.event("decision:asked", id=decision_id, person=person, timeout=timeout)
        answer.add_done_callback(lambda done: self._answered(decision_id, person, done))

    def _answered(self, decision_id: str, person: str, done: Future[Any]) -> None:
        if self.client is None:  # the run has ended: its log is closed, nobody waits for the answer
            return
        self.asked.pop(decision_id, None)
        error = done.exception()
        if error is not None:
            self.session.log.event("decision:ask:failed", id=decision_id, person=person,
                                   error=str(error))
            self.session.status.say(f"could not ask {person} about decision {decision_id}: {error}")
        elif done.result() is None:
            self.session.log.event("decision:ask:unanswered", id=decision_id, person=person)
        else:
            self.decide(decision_id, str(done.result()), via=person)

    def close(self) -> None:
        """Leave the bus."""
        if self.client is not None:
            self.client.close()
            self.client = None

    def answer(self, message: Any) -> Any:
        """The reply to one message: the state, a decision's new status, or how to ask."""
        content = message.content
        words = (content.split(None, 2) if isinstance(content, str)
                 else [str(content.get("cmd", ""))])
        command = words[0].lower() if words else ""
        if command == "status":
            return self.state()
        if command == "decide" and len(words) == 3:
            return self.decide(words[1], words[2])
        return {"error": f"unknown request {content!r}: {USAGE}"}

    def stats(self) -> dict[str, Any]:
        """The stats map ``ps`` shows: iteration n/N, phase, tokens and dollars ("unknown":
        unpriced), and the pending decisions: how many, the oldest as a line, and until when it is
        waited for.

        A heartbeat carries only short scalars (``robotlab.broker.member_stats``), so the oldest
        decision stands for them all; ``status`` lists every one."""
        live, run = self.session.status.state, self.session.run
        of = f"/{live.max_iterations}" if live.max_iterations else ""
        cost: float | str = "unknown" if live.cost is None else live.cost
        pending = self.pending()
        oldest = pending[0] if pending else {}
        return {"iteration": f"{live.iteration}{of}", "phase": live.phase, "tokens": live.tokens,
                "cost": cost, "commits": run.commits,
                "status": f"iteration {live.iteration}{of} · {live.phase}",
                "decisions": len(pending), "decision": _decision_line(oldest) if oldest else None,
                "decision_until": oldest.get("until")}

    def pending(self) -> list[dict[str, Any]]:
        """The pending decisions, oldest first: id, question, whether it blocks, whom it was sent to
        (``person``, with ``--ask``) and ``until`` when it is waited for (the earlier of her time to
        answer and the run's ``--decision-timeout`` wait), each only when there is one."""
        waits = self.session.status.state.decision_until
        rows = []
        for decision in self.session.decisions.all():
            if decision.status != "pending":
                continue
            asked = self.asked.get(decision.id, {})
            ends = [t for t in (asked.get("until"), waits if decision.blocking else None)
                    if t is not None]
            rows.append({"id": decision.id, "question": decision.question,
                         "blocking": decision.blocking, **asked,
                         **({"until": min(ends)} if ends else {})})
        return rows

    def state(self) -> dict[str, Any]:
        """The live state: iteration, phase, activity, tokens, dollars and pending decisions."""
        session, run = self.session, self.session.run
        live = dataclasses.asdict(session.status.state)
        pending = self.pending()
        return {**live, "run_id": run.run_id, "objective": run.objective, "branch": run.branch,
                "commits": run.commits,
                "cost": "unknown" if run.cost_usd is None else round(run.cost_usd, 6),
                "pending_decisions": pending}

    def decide(self, decision_id: str, answer: str, via: str = "bus") -> dict[str, Any]:
        """Resolve a pending decision with ``answer``; the loop picks it up at its next poll."""
        decision = self.session.decisions.resolve(decision_id, answer)
        if decision is None:
            return {"error": f"no pending decision {decision_id!r}: send `status` to list them"}
        self.session.log.event("decision:answered", id=decision_id, via=via, resolution=answer)
        return {"id": decision_id, "status": decision.status, "resolution": decision.resolution}


def _decision_line(decision: dict[str, Any]) -> str:
    """A pending decision in a few words: its id, whether it blocks, whom it went to, its
    question."""
    blocking = " (blocking)" if decision["blocking"] else ""
    person = f" to {decision['person']}" if decision.get("person") else ""
    return f"{decision['id']}{blocking}{person}: {decision['question']}"


def _question(decision_id: str, request: dict[str, Any]) -> str:
    """A decision as the person reads it: the question, then what the robot said around it."""
    blocking = " (BLOCKING: the run waits)" if request.get("blocking") else ""
    lines = [f"decision {decision_id}{blocking}: {request.get('question')}"]
    if request.get("situation"):
        lines.append(f"situation: {request['situation']}")
    if request.get("options"):
        lines.append("options: " + "; ".join(str(option) for option in request["options"]))
    if request.get("recommendation"):
        lines.append(f"the robot leans to: {request['recommendation']}")
    return " | ".join(lines)


class BusJudge:
    """A prose ``Judge`` that is a robot served on the bus (``--judge-robot NAME``).

    Each call sends the judge's instructions and the two versions as one task and reads the
    served robot's reply. What that robot spends is its own (``robotlab top`` shows it), so
    the run counts no tokens for the judge.
    """

    def __init__(self, url: str, robot: str, member: str, timeout: float) -> None:
        self.url, self.robot, self.member, self.timeout = url, robot, member, timeout
        self.client: bus.BusClient | None = None

    def __call__(self, system: str, message: str) -> JudgeReply:
        """Ask the served robot; raises the bus's error (``ReplyTimeout``, ``DeliveryFailed``...)
        if it cannot."""
        if self.client is None:
            self.client = bus.connect(self.url, name=self.member, timeout=5.0)
        reply = self.client.request(self.robot, f"{system}\n\n{message}",
                                    timeout=self.timeout).content
        return JudgeReply(reply if isinstance(reply, str) else str(reply), 0, 0)

    def close(self) -> None:
        """Leave the bus (if a call ever joined it)."""
        if self.client is not None:
            self.client.close()
            self.client = None
