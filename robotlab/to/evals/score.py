"""What an eval returns (Score), what it is given (Context), and the base every eval shares."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from robotlab.to.process.command import CommandResult


@dataclasses.dataclass(frozen=True)
class Score:
    """One eval verdict on the working tree.

    Attributes:
        gate_ok: the change may be kept at all (tests pass, floor passes).
        improved: the change beats the parent commit (always ``gate_ok`` for unscored evals).
        met_target: the run's target is reached; the run stops after committing.
        value: the measured number (higher is better), None for pairwise evals.
        detail: a one-liner for logs, notes and the target reason.
        output: diagnostic text for repair prompts and ``[VERIFY FAILED]`` notes.
        input_tokens: tokens a judge model read (counted toward the run).
        output_tokens: tokens a judge model wrote (counted toward the run).
        reply: a judge model's raw reply, logged.
    """

    gate_ok: bool
    improved: bool
    met_target: bool = False
    value: float | None = None
    detail: str = ""
    output: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    reply: str | None = None


@dataclasses.dataclass(frozen=True)
class Context:
    """What an eval is told about the iteration it scores."""

    work_dir: str
    previous_ref: str
    previous_value: float | None
    objective: str
    iteration: int
    on_command: Callable[[str, str, CommandResult, float], None] | None = None
    """Told of every command the eval runs: (kind, command, result, seconds)."""


class Eval:
    """Base of the bundled evals; a custom eval only needs ``score(context) -> Score``."""

    scored = False
    """True when the prompt should carry score feedback (measure, target or judge)."""

    def score(self, context: Context) -> Score:
        """Score the working tree against the parent commit ``context.previous_ref``."""
        raise NotImplementedError

    def protected_paths(self) -> list[str]:
        """Globs of the eval's own criteria files, locked from the robot."""
        return []
