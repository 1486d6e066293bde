"""The run as a member of the crew (``--broker URL``): it answers ``status`` and ``decide``.

The run joins the bus under its run id, as a robot, so ``robotlab ps`` lists it and any
client can ask it::

    robotlab send --to <run id> status --wait           # the live state, as JSON
    robotlab send --to <run id> "decide <decision id> <answer>" --wait

Messages are answered on the bus client's dispatcher thread; they only read the live state
and write decision files, which the loop polls. Tools and gates still act only on the local
worktree.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from robotlab import bus
from robotlab.to.runner.session import Session

USAGE = "send `status`, or `decide <decision id> <answer>`"


class RunOnBus:
    """The bus membership of one run."""

    def __init__(self, session: Session, url: str) -> None:
        self.session = session
        self.url = url
        self.client: bus.BusClient | None = None

    @property
    def name(self) -> str:
        """The member name: the run id."""
        return self.session.run.run_id

    def start(self, timeout: float = 5.0) -> RunOnBus:
        """Join the bus (raises ``PeerUnavailable`` when no broker answers within ``timeout``)."""
        self.client = bus.connect(self.url, name=self.name, role="robot", timeout=timeout)
        self.client.on_message(self.answer)
        self.session.log.event("bus:joined", url=self.url, member=self.name)
        return self

    def close(self) -> None:
        """Leave the bus."""
        if self.client is not None:
            self.client.close()
            self.client = None

    def answer(self, message: Any) -> Any:
        """The reply to one message: the state, a decision's new status, or how to ask."""
        content = message.content
        words = content.split(None, 2) if isinstance(content, str) else [str(content.get("cmd", ""))]
        command = words[0].lower() if words else ""
        if command == "status":
            return self.state()
        if command == "decide" and len(words) == 3:
            return self.decide(words[1], words[2])
        return {"error": f"unknown request {content!r}: {USAGE}"}

    def state(self) -> dict[str, Any]:
        """The live state: iteration, phase, activity, tokens, dollars and pending decisions."""
        session, run = self.session, self.session.run
        live = dataclasses.asdict(session.status.state)
        pending = [{"id": d.id, "question": d.question, "blocking": d.blocking}
                   for d in session.decisions.all() if d.status == "pending"]
        return {**live, "run_id": run.run_id, "objective": run.objective, "branch": run.branch,
                "commits": run.commits, "cost": "unknown" if run.cost_usd is None else round(run.cost_usd, 6),
                "pending_decisions": pending}

    def decide(self, decision_id: str, answer: str) -> dict[str, Any]:
        """Resolve a pending decision with ``answer``; the loop picks it up at its next poll."""
        decision = self.session.decisions.resolve(decision_id, answer)
        if decision is None:
            return {"error": f"no pending decision {decision_id!r}: send `status` to list them"}
        self.session.log.event("decision:answered", id=decision_id, via="bus", resolution=answer)
        return {"id": decision_id, "status": decision.status, "resolution": decision.resolution}
