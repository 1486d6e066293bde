"""How an iteration ended, as types: the kind of ending and what the orchestrator acts on."""

from __future__ import annotations

import dataclasses
import enum

from robotlab.to.evals.score import Score
from robotlab.to.process.failure import Failure
from robotlab.to.tools.submit import IterationResult


class OutcomeKind(enum.StrEnum):
    """The eight ways an iteration ends, before git is touched (``outcomes.py`` has the table)."""

    COMMIT = "commit"
    NO_IMPROVEMENT = "no_improvement"
    GATE_FAILURE = "gate_failure"
    TAMPERED = "tampered"
    FAILURE = "failure"
    INTERRUPTED = "interrupted"
    ERROR = "error"
    BUDGET = "budget"
    """The token budget ran out before the robot submitted."""


@dataclasses.dataclass
class Outcome:
    """How an iteration ended: its kind, the robot's result, and what explains the kind.

    ``score`` is set once the eval ran; ``error`` for ``ERROR``; ``tampered`` (the locked
    files that changed) for ``TAMPERED``.
    """

    kind: OutcomeKind
    result: IterationResult
    score: Score | None = None
    error: Failure | None = None
    tampered: list[str] = dataclasses.field(default_factory=list)
