"""``AskUser``: the model asks the person at the terminal a question and gets the typed answer.

It reads from ``robot.input`` and writes to ``robot.output`` (stdin and stdout unless set), so
a pair of ``io.StringIO`` makes it testable without a terminal.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from robotlab.tools.tool import Tool

__all__ = ["AskUser"]


class AskUser(Tool):
    """Ask the user one question: open, with numbered ``choices``, and/or with a ``default``.

    The prompt is ``"\\n[<robot>] <question>"``, then ``"  N. <choice>"`` per choice, then
    ``"> "`` (``"> [<default>] "`` with a default). An empty answer gives the default; a number
    within the choices gives that choice. Its name for the model is ``robot_lab--ask_user``
    (the Ruby name, which allowlists and prompts use).

    Args:
        robot: the robot whose ``input``/``output`` and name it uses (the running robot
            replaces it on every call); without one it uses stdin/stdout and the label
            ``Robot``.
    """

    name = "robot_lab--ask_user"
    description = "Ask the user a question and wait for their typed response"
    parameters = {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question to ask the user"},
            "choices": {"type": "array", "items": {"type": "string"},
                        "description": "Optional list of choices to present"},
            "default": {"type": "string", "description": "Default value if user presses Enter"},
        },
        "required": ["question"],
    }

    def __init__(self, robot: Any = None) -> None:
        super().__init__()
        self.robot = robot

    def execute(self, question: str, choices: list[Any] | None = None, default: str | None = None,
                **ignored: Any) -> str:
        """Print the question (and choices), read one line, and return the answer."""
        out, label = self._output(), getattr(self.robot, "name", None) or "Robot"
        options = [str(c) for c in choices] if isinstance(choices, list) else []
        lines = [f"\n[{label}] {question}", *(f"  {i}. {c}" for i, c in enumerate(options, 1))]
        out.write("\n".join(lines) + "\n" + (f"> [{default}] " if default else "> "))
        out.flush()
        answer = self._input().readline().rstrip("\r\n")
        if not answer and default:
            answer = default
        if options and answer.isascii() and answer.isdigit() and 1 <= int(answer) <= len(options):
            answer = options[int(answer) - 1]
        return answer

    def _output(self) -> TextIO:
        return getattr(self.robot, "output", None) or sys.stdout

    def _input(self) -> TextIO:
        return getattr(self.robot, "input", None) or sys.stdin
