"""A robot's conversation as an append-only, versioned log of frozen entries.

The log is saved after every step.

The entries and how they render to chat messages are in ``entries.py``: a run's system
message (recorded when it changes), task, replies, tool calls and results, and its exit; and
rewrites (compaction, ``replace_messages``, ``clear_messages``, ``compress_history``), which
replace the transcript before them. Nothing is ever removed. Chat messages are rendered on
demand and leave out runs that failed, so a run that raises leaves the conversation as it was,
while the log keeps what it did.

On disk the log is one JSON document, ``{"format": 1, "robot": ..., "entries": [...]}``, written
to a temp file and renamed over the target after every append, so a killed process leaves a
readable record up to its last step. Loading a log whose last run has no exit entry closes that
run as ``interrupted``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigError
from robotlab.history.entries import (
    COMPLETED,
    FAILED,
    INTERRUPTED,
    KINDS,
    Entry,
    ExitEntry,
    ReplyEntry,
    RewriteEntry,
    SystemEntry,
    TaskEntry,
    ToolCallEntry,
    ToolResultEntry,
    entry_from_dict,
    exit_status,
    render,
)

# The entries are defined in entries.py and re-exported here, where their users import them.
__all__ = [
    "COMPLETED",
    "FAILED",
    "FORMAT",
    "INTERRUPTED",
    "KINDS",
    "Entry",
    "ExitEntry",
    "HistoryLog",
    "ReplyEntry",
    "RewriteEntry",
    "SystemEntry",
    "TaskEntry",
    "ToolCallEntry",
    "ToolResultEntry",
    "entry_from_dict",
    "exit_status",
    "render",
]

log = logging.getLogger("robotlab.history.compaction")

FORMAT = 1
"""The version of the JSON document; a different one is refused on load."""


def _line(entry: Entry) -> str:
    return json.dumps(entry.to_dict(), ensure_ascii=False, default=str)


class HistoryLog:
    """A robot's entries, and the file they are saved to after every append (if any).

    Args:
        path: where to save; None keeps the log in memory only.
        robot: the robot's name, written into the document.
        entries: entries to start from (a loaded log).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, robot: str = "robot",
                 entries: Iterable[Entry] = ()) -> None:
        self.path = Path(path) if path else None
        self.robot = robot
        self._entries = list(entries)
        self._lock = threading.RLock()
        self._runs = max((e.run for e in self._entries if e.run is not None), default=0)
        self._open: int | None = None
        ended = {e.run for e in self._entries if isinstance(e, ExitEntry)}
        if self._runs and self._runs not in ended:
            self._entries.append(ExitEntry(run=self._runs, status=INTERRUPTED,
                                           error="the process ended before the run did"))
        # Entries are frozen, so each is serialised once: a save only joins the lines.
        self._lines = [_line(e) for e in self._entries]

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None, robot: str = "robot") -> HistoryLog:
        """The log saved at ``path`` if the file exists, else a new one; written at once.

        Raises:
            ConfigError: the file is not a history of this format, or cannot be written.
        """
        if path is None:
            return cls(None, robot)
        history = cls.load(path) if Path(path).exists() else cls(path, robot)
        history.robot = robot
        try:
            history.save()
        except OSError as exc:
            raise ConfigError(f"cannot write the history file {str(path)!r}: {exc}") from exc
        return history

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> HistoryLog:
        """Read a saved log (it keeps saving to ``path``).

        Raises:
            ConfigError: unreadable, not JSON, or another ``format``.
        """
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the history file {str(path)!r}: {exc}") from exc
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            found = document.get("format") if isinstance(document, dict) else None
            raise ConfigError(f"{str(path)!r} is not a robotlab history of format {FORMAT} "
                              f"(format: {found!r})")
        entries = [entry_from_dict(item) for item in document.get("entries") or []]
        return cls(path, str(document.get("robot") or "robot"), entries)

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Every entry so far, oldest first."""
        with self._lock:
            return tuple(self._entries)

    def messages(self) -> list[dict[str, Any]]:
        """The chat messages (no system message: the robot supplies its current one)."""
        return render(self.entries)

    def last_system(self) -> str | None:
        """The most recently recorded system message, if any."""
        return next((e.content for e in reversed(self.entries) if isinstance(e, SystemEntry)), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        return {"format": FORMAT, "robot": self.robot,
                "entries": [e.to_dict() for e in self.entries]}

    def begin_run(self, system: str | None) -> int:
        """Open a run (closing one left open); record the system message if it changed."""
        with self._lock:
            if self._open is not None:
                self.end_run(RuntimeError("a new run started before this one ended"))
            self._runs += 1
            self._open = self._runs
            if system and system != self.last_system():
                self.append(SystemEntry(content=system))
            return self._open

    def append(self, *entries: Entry) -> None:
        """Add entries (stamped with the open run) and save."""
        with self._lock:
            stamped = [dataclasses.replace(e, run=self._open) if e.run is None else e
                       for e in entries]
            self._entries.extend(stamped)
            self._lines.extend(_line(e) for e in stamped)
            self._save_quietly()

    def end_run(self, error: BaseException | None = None, reply: str | None = None) -> None:
        """Close the open run with an exit entry (nothing happens when no run is open)."""
        with self._lock:
            if self._open is None:
                return
            detail = f"{type(error).__name__}: {error}" if error is not None else None
            self.append(ExitEntry(status=exit_status(error), reply=reply, error=detail))
            self._open = None

    def rewrite(self, messages: Iterable[dict[str, Any]], reason: str) -> None:
        """Replace the transcript with ``messages`` (recorded, not erased)."""
        self.append(RewriteEntry(run=None, reason=reason,
                                 messages=tuple(dict(m) for m in messages)))

    def save(self) -> None:
        """Write the document atomically (temp file, fsync, rename); nothing without a path.

        Raises:
            OSError: the file cannot be written.
        """
        if self.path is None:
            return
        with self._lock:
            body = ",\n".join(self._lines)
            head = json.dumps({"format": FORMAT, "robot": self.robot})[:-1]
        text = f'{head}, "entries": [\n{body}\n]}}\n'
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)

    def _save_quietly(self) -> None:
        # A full disk must not kill the run: the log stays whole in memory and the next
        # append writes it again.
        try:
            self.save()
        except OSError as exc:
            log.warning("cannot save the history of %s to %s: %s", self.robot, self.path, exc)
