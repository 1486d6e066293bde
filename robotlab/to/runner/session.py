"""The collaborators of one run, passed explicitly to the loop and its steps."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from robotlab.process_groups import Supervisor
from robotlab.to.child.robot_factory import RobotModel
from robotlab.to.child.token_meter import add_cost
from robotlab.to.config import RobotToSettings
from robotlab.to.git import Git
from robotlab.to.process.forked import Watch
from robotlab.to.record.decisions import DecisionStore
from robotlab.to.record.notes import Notes
from robotlab.to.record.run_log import JsonlLog
from robotlab.to.record.status import Status
from robotlab.to.runner.backoff import Backoff
from robotlab.to.runner.state import Run


@dataclasses.dataclass
class Session:
    """One run's state and the objects that act on it."""

    run: Run
    settings: RobotToSettings
    root: str
    git: Git
    log: JsonlLog
    notes: Notes
    evaluator: Any
    backoff: Backoff
    decisions: DecisionStore
    supervisor: Supervisor
    status: Status
    watch: Watch = dataclasses.field(default_factory=Watch)
    signal_name: str | None = None
    commit_failure: str | None = None
    lock_patterns: list[str] = dataclasses.field(default_factory=list)
    closers: list[Callable[[], None]] = dataclasses.field(default_factory=list)
    """Called once when the run ends (a bus judge leaves the bus)."""
    ask_crew: Callable[[str, str], str] | None = None
    """How ``ask_crew`` reaches a served robot (set once the run joined the bus)."""
    ask_human: Callable[[str, dict[str, Any]], None] | None = None
    """Sends a new decision (its id, the robot's request) to the person named by ``--ask``."""
    model_answered: bool = False
    """True once the model answered in this process (the preflight's call, or any usage)."""

    @property
    def model(self) -> RobotModel:
        """How the iteration's robot reaches its model."""
        return RobotModel.of(self.settings)

    @property
    def stopping(self) -> bool:
        """True once a signal asked the run to stop."""
        return self.watch.stop.is_set()

    def request_stop(self, signal_name: str | None = None) -> None:
        """Stop at the next boundary; kill what runs now; end every wait."""
        if signal_name and not self.signal_name:
            self.signal_name = signal_name
        self.watch.stop.set()
        self.backoff.interrupt()

    def rollback(self) -> bool:
        """Throw away the iteration's changes, unless a failed commit awaits repair; True when it
        did."""
        if self.commit_failure is not None:
            return False
        self.git.reset_hard()
        return True

    def save(self) -> None:
        """Write ``run.json``; a failed write is logged and the run goes on."""
        try:
            self.run.save(self.root)
        except OSError as exc:
            self.log.event("run_state:write_failed", message=str(exc))

    def add_usage(self, input_tokens: int, output_tokens: int, cost: float | None,
                  estimated: bool = False) -> None:
        """Count tokens and dollars toward the run (robot and judge alike; None: unpriced).

        ``estimated``: the provider reported no usage for some of these tokens' calls.
        """
        self.model_answered = self.model_answered or input_tokens + output_tokens > 0
        self.run.input_tokens += input_tokens
        self.run.output_tokens += output_tokens
        self.run.cost_usd = add_cost(self.run.cost_usd, cost)
        self.run.tokens_estimated = self.run.tokens_estimated or estimated
        self.status.update(tokens=self.run.total_tokens, cost=self.run.cost_usd,
                           estimated=self.run.tokens_estimated)
