"""A robot's conversation: its ``HistoryLog`` (``robotlab.history.log``) and the system message.

Everything that changes the transcript as a whole (``clear``, ``replace``, ``compress``)
appends a rewrite entry: the log never forgets, the rendered messages do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from robotlab.history.compaction import HistoryResult, compress_history, search_history
from robotlab.history.log import HistoryLog

__all__ = ["Conversation", "SystemText"]


class SystemText(Protocol):
    """Where the robot's system message lives (its ``RobotSetup`` is one)."""

    system_text: str | None

    def system_messages(self) -> list[dict[str, Any]]:
        """The system message as a one-element list (empty when there is none)."""


class Conversation:
    """The transcript of one robot: the system message, then every turn so far.

    Args:
        system: where the system message lives.
        path: the log file (loaded if it exists, saved after every step), or None.
        name: the robot's name, recorded in the log.
    """

    def __init__(self, system: SystemText, path: str | Path | None, name: str) -> None:
        self.system = system
        self.log = HistoryLog.open(path, name)
        if system.system_text is None:
            # A robot with no system message of its own takes the one the saved log recorded.
            system.system_text = self.log.last_system()

    @property
    def path(self) -> Path | None:
        """Where the history is saved after every step, or None."""
        return self.log.path

    def messages(self) -> list[dict[str, Any]]:
        """The system message (if any), then every turn so far."""
        return self.system.system_messages() + self.log.messages()

    def clear(self, keep_system: bool = True) -> None:
        """Forget the conversation; with ``keep_system=False`` the system message goes too."""
        self.log.rewrite([], "clear")
        if not keep_system:
            self.system.system_text = None

    def replace(self, messages: list[dict[str, Any]]) -> None:
        """Replace the conversation (a leading system message replaces the system prompt)."""
        messages = [dict(m) for m in messages]
        if messages and messages[0].get("role") == "system":
            self.system.system_text = messages.pop(0).get("content")
        self.log.rewrite(messages, "replace")

    def compress(self, recent_turns: int = 3, keep_threshold: float = 0.6,
                 drop_threshold: float = 0.2,
                 summarizer: Callable[[str], str] | None = None) -> None:
        """Keep, summarise or drop older turns by relevance to the recent ones.

        See ``docs/robots.md``.
        """
        compressed = compress_history(self.log.messages(), recent_turns, keep_threshold,
                                      drop_threshold, summarizer)
        self.log.rewrite(compressed, "compress")

    def search(self, query: str, limit: int = 5) -> list[HistoryResult]:
        """Conversation messages most similar to ``query``, best first."""
        return search_history(self.messages(), query, limit)
