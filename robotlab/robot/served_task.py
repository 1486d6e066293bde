"""How a served robot runs each task it is sent: so that it goes on serving once its conversation
has outgrown the model's context window. Every task another process hands it runs this way: a
message to ``serve``, a run request (spawn handles, delegation by name) and a network's task.

A served robot keeps one conversation across every task it answers (``run`` remembers). Left
alone, that conversation grows with every task until the model refuses it; from then on every
task fails at once, and a robot left serving overnight answers nothing by morning. So when a task
fails for the context window, the older half of the conversation goes and the task runs again,
then the older half of what is left, and so on, down to nothing but the system prompt: the newest
turns, the likeliest to matter to the next task, are the last to go. A task too large on its own
still fails, with its cause.
"""

from __future__ import annotations

import logging
from typing import Any

from robotlab.errors import InferenceError
from robotlab.errors.causes import Cause

__all__ = ["run_fitting"]

log = logging.getLogger("robotlab.robot")


def run_fitting(robot: Any, message: Any, **run_options: Any) -> Any:
    """``robot.run(message, **run_options)``, the robot's conversation shortened from the oldest
    end as often as the model's context window needs; its ``RobotResult``.

    Raises:
        InferenceError: the model failed for another cause, or the task overflows the window with
            no conversation left to drop.
    """
    while True:
        try:
            return robot.run(message, **run_options)
        except InferenceError as exc:
            history = robot.conversation.log.messages()
            if exc.cause != Cause.CONTEXT_WINDOW or not history:
                raise
            kept = newer_half(history)
            log.warning("%s: the model's context window no longer holds its conversation; the "
                        "oldest %d of its %d messages are dropped and the task runs again",
                        robot.name, len(history) - len(kept), len(history))
            robot.replace_messages(kept)


def newer_half(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newer half of a conversation (without its system message), cut before a user's message
    so that no tool result is left without the call that asked for it; empty when the newer half
    holds no user's message."""
    for start in range(len(messages) // 2 or 1, len(messages)):
        if messages[start].get("role") == "user":
            return messages[start:]
    return []
