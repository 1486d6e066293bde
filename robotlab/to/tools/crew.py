"""The ``ask_crew`` tool (``--crew NAME,...``): ask a robot served on the bus a question.

The iteration's robot runs in a child process with no bus connection of its own; ``ask`` is
how the child reaches the orchestrator, which asks the crew member over the bus and sends
the answer back. A failed question is an observation for the model, never a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NAME = "ask_crew"
Ask = Callable[[str, str], str]
"""``ask(robot, question) -> answer`` (raises when the robot cannot answer)."""


def description(crew: list[str]) -> str:
    """What the model is told about the tool and who it may ask."""
    return ("Ask one of the robots on your crew a question and get its answer (they cannot see "
            "or change your files; send them what they need in the question). "
            f"Crew: {', '.join(crew)}.")


def schema(crew: list[str]) -> dict[str, Any]:
    """The tool's parameters: which robot, and the question."""
    return {
        "type": "object",
        "properties": {
            "robot": {"type": "string", "enum": list(crew), "description": "who to ask"},
            "question": {"type": "string",
                         "description": "the question, with the context it needs"},
        },
        "required": ["robot", "question"],
    }


def handler(crew: list[str], ask: Ask) -> Callable[[dict[str, Any]], str]:
    """The tool's handler: the answer, or why there is none."""

    def ask_crew(args: dict[str, Any]) -> str:
        robot, question = str(args.get("robot") or ""), str(args.get("question") or "").strip()
        if robot not in crew:
            return f"Error: {robot!r} is not on the crew; ask one of: {', '.join(crew)}"
        if not question:
            return "Error: ask_crew needs a question"
        try:
            return ask(robot, question)
        except Exception as exc:  # the crew member's failure is something the model can read
            return f"Error: {robot} did not answer: {exc}"

    return ask_crew
