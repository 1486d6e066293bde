"""The robot's conversation methods, over its ``HistoryLog`` (``robotlab.history.log``).

Everything that changes the transcript as a whole (``clear_messages``, ``replace_messages``,
``compress_history``) appends a rewrite entry: the log never forgets, the rendered messages do.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from robotlab.history.compaction import HistoryResult, compress_history, search_history
from robotlab.history.log import HistoryLog

__all__ = ["ConversationMethods"]


class ConversationMethods:
    """Mixin for ``Robot``: ``messages``, ``history``, the methods that rewrite the transcript,
    and the ``input``/``output`` streams a robot talks to a person through (``AskUser``)."""

    _setup: Any
    _log: HistoryLog
    name: str
    config: Any
    _input: TextIO | None = None
    _output: TextIO | None = None

    def _open_history(self) -> None:
        """Open the log at ``config.history_path`` (loading a saved one); a robot with no system
        message of its own takes the one the saved log last recorded."""
        self._log = HistoryLog.open(self.config.history_path, self.name)
        if self._setup.system_text is None:
            self._setup.system_text = self._log.last_system()

    @property
    def input(self) -> TextIO:
        """Where ``AskUser`` reads the person's answers (stdin unless set)."""
        return self._input or sys.stdin

    @input.setter
    def input(self, stream: TextIO | None) -> None:
        self._input = stream

    @property
    def output(self) -> TextIO:
        """Where ``AskUser`` writes its questions (stdout unless set)."""
        return self._output or sys.stdout

    @output.setter
    def output(self, stream: TextIO | None) -> None:
        self._output = stream

    @property
    def history(self) -> HistoryLog:
        """The append-only log of this robot's conversation (``docs/robots.md``, "History")."""
        return self._log

    @property
    def history_path(self) -> Path | None:
        """Where the history is saved after every step, or None."""
        return self._log.path

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation: the system message (if any), then every turn so far."""
        return self._setup.system_messages() + self._log.messages()

    def clear_messages(self, keep_system: bool = True) -> Any:
        """Forget the conversation; with ``keep_system=False`` the system message goes too."""
        self._log.rewrite([], "clear")
        if not keep_system:
            self._setup.system_text = None
        return self

    def replace_messages(self, messages: list[dict[str, Any]]) -> Any:
        """Replace the conversation (a leading system message replaces the system prompt)."""
        messages = [dict(m) for m in messages]
        if messages and messages[0].get("role") == "system":
            self._setup.system_text = messages.pop(0).get("content")
        self._log.rewrite(messages, "replace")
        return self

    def compress_history(self, recent_turns: int = 3, keep_threshold: float = 0.6, drop_threshold: float = 0.2,
                         summarizer: Callable[[str], str] | None = None) -> Any:
        """Keep, summarise or drop older turns by relevance to the recent ones (``docs/robots.md``)."""
        compressed = compress_history(self._log.messages(), recent_turns, keep_threshold, drop_threshold, summarizer)
        self._log.rewrite(compressed, "compress")
        return self

    def search_history(self, query: str, limit: int = 5) -> list[HistoryResult]:
        """Conversation messages most similar to ``query``, best first."""
        return search_history(self.messages, query, limit)
