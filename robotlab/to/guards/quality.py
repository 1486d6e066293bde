"""The quality monitor: the degenerate output modes that waste an unattended run's tokens.

| reason | seen when | ends the attempt (``QualityError``) |
| --- | --- | --- |
| ``repeated_tool_call`` | the same tool, same arguments, again | 4th identical call in a row |
| ``empty_tool_name`` | a tool call without a name | 3rd bad tool name in a row |
| ``unknown_tool:<name>`` | a tool call naming a tool the robot lacks | 3rd bad tool name in a row |
| ``empty_response`` | a run ends with no text, tool call or submission | 2nd such run in a row |

Below its limit a detector records a warning: the orchestrator logs it and puts the
detector's correction message in front of the robot's next message (the nudge or repair).
State lasts for the whole iteration, since one child process serves it.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from robotlab.errors import QualityError

REPEAT_LIMIT = 2
"""Identical calls in a row beyond the first that are tolerated."""
BAD_NAME_LIMIT = 3
"""Bad tool names in a row that end the attempt."""
EMPTY_LIMIT = 2
"""Empty unsubmitted replies in a row that end the attempt."""

CORRECTIONS = {
    "repeated_tool_call": "You repeated the previous tool call verbatim; you appear to be stuck. "
                          "Try a different approach or explain what is blocking you.",
    "empty_response": "Your response was empty. Respond with text or a tool call to make progress.",
    "empty_tool_name": "You called a tool without a name. "
                       "Call one of your tools by its exact name.",
}


def correction_message(reason: str) -> str:
    """What the robot is told after ``reason`` was detected."""
    if reason.startswith("unknown_tool:"):
        return f"Tool '{reason.split(':', 1)[1]}' does not exist. Use only your registered tools."
    return CORRECTIONS.get(reason,
                           f"Response quality issue ({reason}). Please correct and continue.")


class QualityMonitor:
    """Every detector of one iteration, with its counters and the warnings not yet reported."""

    def __init__(self) -> None:
        self._last: str | None = None
        self.repeats = 0
        self.bad_names = 0
        self.empties = 0
        self.warnings: list[str] = []

    def record(self, name: str, args: dict[str, Any]) -> None:
        """Record one call of a known tool; raises QualityError on the 4th identical call in a
        row."""
        key = json.dumps({"name": name, "args": args}, sort_keys=True, default=str)
        self.repeats = self.repeats + 1 if key == self._last else 0
        self._last = key
        if self.repeats > REPEAT_LIMIT:
            raise QualityError("repeated_tool_call")

    def tool_called(self, name: str | None, known: Collection[str]) -> None:
        """Check a requested tool name (before it runs); raises QualityError at the limit."""
        reason = "empty_tool_name" if not (name or "").strip() else None
        if reason is None and name not in known:
            reason = f"unknown_tool:{name}"
        if reason is None:
            self.bad_names = 0
            return
        self.bad_names += 1
        self._warn_or_raise(reason, self.bad_names >= BAD_NAME_LIMIT)

    def run_ended(self, reply: str | None, tool_calls: int, submitted: bool) -> None:
        """Check how a robot run ended; raises QualityError on the 2nd empty reply in a row."""
        if submitted or tool_calls or (reply or "").strip():
            self.empties = 0
            return
        self.empties += 1
        self._warn_or_raise("empty_response", self.empties >= EMPTY_LIMIT)

    def drain(self) -> list[str]:
        """The warnings recorded since the last drain."""
        warnings, self.warnings = self.warnings, []
        return warnings

    def _warn_or_raise(self, reason: str, over: bool) -> None:
        if over:
            raise QualityError(reason)
        self.warnings.append(reason)
