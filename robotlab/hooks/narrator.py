"""``Narrator``: the one shipped hook, a line on stderr for each thing a robot does.

``robotlab.Narrator.enable()`` registers it globally (every robot in the process, networks and
robot-to included); ``Narrator.disable()`` takes it out again. Output::

      · planner: thinking…
      · → write path="test/temperature_converter_test.rb"
      ·   ✗ disk full

Each line is clipped to 80 characters. A narrator never breaks a run: its own errors (a closed
stream, an argument that does not print) are swallowed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from robotlab.hooks.hooks import Hook, LlmGenerationHookContext, ToolCallHookContext, global_hooks

__all__ = ["WIDTH", "Narrator", "clip"]

WIDTH = 80


def clip(line: str, width: int = WIDTH) -> str:
    """``line`` on one line, cut to ``width`` characters with a trailing ``…`` when longer."""
    line = " ".join(line.splitlines())
    return line if len(line) <= width else line[: width - 1] + "…"


class Narrator(Hook):
    """Prints before generation, before each tool call and after a failed one (module docstring).

    Args:
        output: the stream to write to (default: ``sys.stderr`` at the time of each line).
    """

    namespace = "narrator"

    def __init__(self, output: TextIO | None = None) -> None:
        self.output = output

    @classmethod
    def enable(cls, output: TextIO | None = None) -> Narrator:
        """Register a narrator globally (once: enabling again only changes the stream)."""
        for handler in global_hooks().handlers():
            if isinstance(handler, Narrator):
                handler.output = output
                return handler
        narrator = cls(output)
        global_hooks().on(narrator)
        return narrator

    @classmethod
    def disable(cls) -> None:
        """Take every globally registered narrator out."""
        global_hooks().remove(lambda handler: isinstance(handler, Narrator))

    def before_llm_generation(self, ctx: LlmGenerationHookContext) -> None:
        """``  · <robot>: thinking…``"""
        self._say(lambda: f"  · {getattr(ctx.robot, 'name', 'robot')}: thinking…")

    def before_tool_call(self, ctx: ToolCallHookContext) -> None:
        """``  · → <tool> <first_arg>=<value>``"""
        self._say(lambda: f"  · → {ctx.tool_name}{_first_argument(ctx.tool_args)}")

    def after_tool_call(self, ctx: ToolCallHookContext) -> None:
        """``  ·   ✗ <error>`` when the tool failed."""
        error = ctx.tool_error
        if error is not None:
            self._say(lambda: f"  ·   ✗ {error or type(error).__name__}")

    def _say(self, line: Callable[[], str]) -> None:
        try:
            stream = self.output or sys.stderr
            stream.write(clip(line()) + "\n")
            stream.flush()
        except Exception:  # narration is best effort: it must never fail the robot's work
            pass


def _first_argument(arguments: Any) -> str:
    if not isinstance(arguments, dict) or not arguments:
        return ""
    name, value = next(iter(arguments.items()))
    return f" {name}={json.dumps(value, ensure_ascii=False, default=str)}"
