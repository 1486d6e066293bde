"""The code eval: a verify command is the gate, a measure command the descent signal.

The base commit's score is measured before iteration 1 (``baseline``), so the first
iteration must beat it. The number is read from the measure's stdout only; a measure
that times out or prints no number fails the gate.
"""

from __future__ import annotations

import re
import time

from robotlab.process_groups import Supervisor
from robotlab.to.evals.score import Context, Eval, Score
from robotlab.to.process.command import DEFAULT_TIMEOUT, CommandResult, run_command

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def read_number(text: str) -> float | None:
    """The first number in ``text`` (optional minus, digits, optional decimals), or None."""
    match = _NUMBER.search(text)
    return float(match.group(0)) if match else None


class CodeEval(Eval):
    """Gate on ``verify``; measure with ``measure``; stop at ``target``."""

    def __init__(
        self,
        verify: str | None = None,
        measure: str | None = None,
        target: float | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        supervisor: Supervisor | None = None,
    ) -> None:
        self.verify = verify if verify and verify.strip() else None
        self.measure = measure if measure and measure.strip() else None
        self.target = target
        self.timeout = timeout
        self.supervisor = supervisor
        self.scored = self.measure is not None or target is not None

    def _run(self, kind: str, command: str, context: Context, merge: bool = True) -> CommandResult:
        started = time.monotonic()
        result = run_command(command, context.work_dir, self.timeout, self.supervisor, merge=merge)
        if context.on_command is not None:
            context.on_command(kind, command, result, time.monotonic() - started)
        return result

    def _measure(self, context: Context) -> tuple[float | None, str | None]:
        """(value, failure text); the failure text is set when no number could be read."""
        assert self.measure is not None
        result = self._run("measure", self.measure, context, merge=False)
        if result.timed_out:
            return None, f"measure `{self.measure}` timed out:\n{result.output}"
        value = read_number(result.stdout)
        if value is None:
            return None, f"measure `{self.measure}` printed no number on stdout:\n{result.output}"
        return value, None

    def baseline(self, context: Context) -> float | None:
        """The measured value of the tree as it is (the base commit), or None."""
        return self._measure(context)[0] if self.measure else None

    def score(self, context: Context) -> Score:
        """Verify, then (when the gate passed) measure and compare with the parent's value."""
        gate_ok, output = True, None
        if self.verify:
            result = self._run("verify", self.verify, context)
            gate_ok, output = result.passed, result.output
        if not gate_ok or not self.measure:
            return Score(gate_ok=gate_ok, improved=gate_ok, detail=f"verify={str(gate_ok).lower()}",
                         output=output)
        value, failure = self._measure(context)
        if value is None:
            return Score(gate_ok=False, improved=False, detail="verify=true measure=none",
                         output=failure)
        previous = context.previous_value
        improved = previous is None or value > previous
        met = self.target is not None and value >= self.target
        return Score(gate_ok, improved, met, value, f"verify=true measure={value}", output)
