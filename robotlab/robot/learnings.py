"""Learnings: short lessons a robot keeps and prepends to later messages."""

from __future__ import annotations

from typing import Any

from robotlab.hooks.hooks import HookScope, LearnHookContext

__all__ = ["Learnings", "record_learning"]

HEADER = "LEARNINGS FROM PREVIOUS RUNS:"


class Learnings:
    """An ordered list of lessons where a broader lesson replaces the narrower ones it contains."""

    def __init__(self, items: list[str] | None = None) -> None:
        self.items: list[str] = list(items or [])

    def add(self, text: str) -> bool:
        """Add ``text`` (already stripped); return whether it was stored.

        Existing lessons contained in ``text`` are removed; ``text`` is not stored when an
        existing lesson already contains it.
        """
        self.items = [item for item in self.items if item not in text or item == text]
        if any(text in item for item in self.items):
            return False
        self.items.append(text)
        return True

    def inject(self, message: str | None) -> str | None:
        """``message`` with the learnings block in front (unchanged when there are none)."""
        if not self.items or message is None:
            return message
        lines = "\n".join(f"- {item}" for item in self.items)
        return f"{HEADER}\n{lines}\n\n{message}"


def record_learning(robot: Any, learnings: Learnings, text: str) -> None:
    """Add ``text`` inside the ``learn`` hooks and copy the list to the robot's own memory.

    ``on_learn`` hooks fire afterwards, whether or not the text was stored.
    """
    scope = HookScope(robot.shared_hooks, None, robot.hooks)
    ctx = LearnHookContext(robot=robot, text=text, learnings_before=tuple(learnings.items))

    def core() -> bool:
        ctx.stored = learnings.add(text)
        robot.memory.set("learnings", list(learnings.items))
        return ctx.stored

    scope.run("learn", ctx, core)
    scope.fire("learn", ctx)
