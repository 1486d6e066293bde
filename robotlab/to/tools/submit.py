"""The result and escalation tools every iteration's robot gets, and what they capture.

``submit_iteration_result`` stores the robot's claim (the last call wins);
``request_decision`` appends a question for a human (several per iteration are allowed).
"""

from __future__ import annotations

import dataclasses
from typing import Any

SUBMIT_NAME = "submit_iteration_result"
DECISION_NAME = "request_decision"
SUBMIT_REPLY = "Iteration complete. Stop all work now."
BLOCKING_REPLY = (
    "Decision recorded (BLOCKING). Stop work now and call submit_iteration_result; the run will "
    "pause until a human resolves it."
)
DECISION_REPLY = ("Decision recorded. Continue with other work you can safely do, "
                  "then submit your result.")


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(item) for item in value] if isinstance(value, list | tuple) else [str(value)]


@dataclasses.dataclass
class IterationResult:
    """What the robot claims about its iteration."""

    success: bool
    summary: str
    key_changes: list[str] = dataclasses.field(default_factory=list)
    key_learnings: list[str] = dataclasses.field(default_factory=list)
    should_fully_stop: bool = False
    type: str | None = None
    scope: str | None = None

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> IterationResult:
        """Build from tool arguments (single values become one-item lists)."""
        return cls(
            success=bool(args.get("success")),
            summary=str(args.get("summary") or "").strip(),
            key_changes=_listed(args.get("key_changes")),
            key_learnings=_listed(args.get("key_learnings")),
            should_fully_stop=bool(args.get("should_fully_stop")),
            type=(str(args["type"]).strip() or None) if args.get("type") else None,
            scope=(str(args["scope"]).strip() or None) if args.get("scope") else None,
        )

    @classmethod
    def missing(cls) -> IterationResult:
        """The stand-in when the robot never submitted."""
        return cls(success=False, summary="Robot did not call submit_iteration_result")


SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "success": {"type": "boolean", "description": "true if meaningful progress was made"},
        "summary": {"type": "string", "description": "one sentence"},
        "key_changes": {"type": "array", "items": {"type": "string"},
                        "description": "files or changes"},
        "key_learnings": {"type": "array", "items": {"type": "string"}, "description": "insights"},
        "should_fully_stop": {"type": "boolean",
                              "description": "only when instructed by a stop condition"},
        "type": {"type": "string",
                 "description": "conventional commit type: feat, fix, docs, refactor, test, chore"},
        "scope": {"type": "string", "description": "conventional commit scope (optional)"},
    },
    "required": ["success", "summary"],
}
SUBMIT_DESCRIPTION = (
    "Submit this iteration's result. You MUST call it as your FINAL action, "
    "and not before your work is complete."
)
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string"},
        "situation": {"type": "string"},
        "options": {"type": "array", "items": {"type": "string"}},
        "recommendation": {"type": "string", "description": "your lean"},
        "blocking": {"type": "boolean", "description": "true only when work cannot continue"},
    },
    "required": ["question"],
}
DECISION_DESCRIPTION = (
    "Record a decision that needs human judgement (irreversible, public contract, "
    "ambiguous intent, out of scope) with your lean. It does NOT block for an answer."
)


class Capture:
    """What the result tools captured during one iteration (nudges and repairs included)."""

    def __init__(self) -> None:
        self.result: IterationResult | None = None
        self.decisions: list[dict[str, Any]] = []

    def submit(self, args: dict[str, Any]) -> str:
        """Handler of ``submit_iteration_result``."""
        self.result = IterationResult.from_args(args)
        return SUBMIT_REPLY

    def decide(self, args: dict[str, Any]) -> str:
        """Handler of ``request_decision``."""
        request = {key: args.get(key)
                   for key in ("question", "situation", "options", "recommendation")}
        request["blocking"] = bool(args.get("blocking"))
        self.decisions.append(request)
        return BLOCKING_REPLY if request["blocking"] else DECISION_REPLY
