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

Some servers (llama.cpp's among them) do not refuse a prompt that nearly fills the window: they
answer, and stop when the window is full, the reply cut short with ``finish_reason`` ``length``
though no ``max_tokens`` was reached. Such a reply, to a task that called no tool (so running it
again repeats nothing), is taken as the window's refusal: the task's turn and the older half of
the conversation before it go, and the task runs again.
"""

from __future__ import annotations

import logging
from typing import Any

from robotlab.errors import InferenceError
from robotlab.errors.causes import Cause
from robotlab.robot.tool_loop import held_cuts, truncation_warning

__all__ = ["cut_by_the_window", "newer_half", "run_fitting"]

log = logging.getLogger("robotlab.robot")


def run_fitting(robot: Any, message: Any, **run_options: Any) -> Any:
    """``robot.run(message, **run_options)``, the robot's conversation shortened from the oldest
    end as often as the model's context window needs; its ``RobotResult``.

    A reply the window cut short is logged once, as the step taken (its turn dropped, the task run
    again), not also as the tool loop's advice to shorten the conversation; a reply returned cut
    (by ``max_tokens``) gets that advice, as a run outside a served robot does.

    Raises:
        InferenceError: the model failed for another cause, or the task overflows the window with
            no conversation left to drop.
    """
    while True:
        history = robot.conversation.log.messages()
        cuts: list[tuple[int | None, int | None]] = []
        holding = held_cuts.set(cuts)
        try:
            result = robot.run(message, **run_options)
        except InferenceError as exc:
            if exc.cause != Cause.CONTEXT_WINDOW or not history:
                raise
            why = "no longer holds its conversation"
        else:
            if not history or not cut_by_the_window(result, run_options.get(
                    "max_tokens", getattr(robot.config, "max_tokens", None))):
                for limit, written in cuts:  # returned cut: the advice the tool loop holds
                    log.warning("%s", truncation_warning(robot.name, limit, written))
                return result
            why = f"cut its reply short after {result.raw.usage.output_tokens} tokens"
        finally:
            held_cuts.reset(holding)
        kept = newer_half(history)
        log.warning("%s: the model's context window %s; the oldest %d of its %d messages are "
                    "dropped and the task runs again", robot.name, why,
                    len(history) - len(kept), len(history))
        robot.replace_messages(kept)


def cut_by_the_window(result: Any, max_tokens: int | None) -> bool:
    """True when ``result``'s last reply was cut short though it reached no ``max_tokens`` (so
    the context window cut it), and the run called no tool."""
    if not result.truncated or result.tool_calls or result.raw is None:
        return False
    usage = result.raw.usage
    if max_tokens is None:
        return True
    return not usage.estimated and usage.output_tokens < max_tokens


def newer_half(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newer half of a conversation (without its system message), cut before a user's message
    so that no tool result is left without the call that asked for it; empty when the newer half
    holds no user's message."""
    for start in range(len(messages) // 2 or 1, len(messages)):
        if messages[start].get("role") == "user":
            return messages[start:]
    return []
