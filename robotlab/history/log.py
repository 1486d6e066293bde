"""A robot's conversation as an append-only, versioned log of frozen entries.

The log is saved after every step.

The entries and how they render to chat messages are in ``entries.py``: a run's system
message (recorded when it changes), task, replies, tool calls and results, and its exit; and
rewrites (compaction, ``replace_messages``, ``clear_messages``, ``compress_history``), which
replace the transcript before them. Nothing is ever removed from the file. Chat messages are
rendered on demand, from the last rewrite on, and leave out runs that failed, so a run that raises
leaves the conversation as it was, while the log keeps what it did.

Memory holds what rendering needs, so a robot serving all night (its conversation rewritten each
time it outgrows the model's window) holds a log of bounded size: the entries since the last
rewrite, and of those before it, none once the file holds them (``entries`` reads them back), or,
with no file, the newest ``ENTRIES_KEPT``.

On disk (``log_file.py``) the log is a header line and one JSON line per entry, appended and
fsynced at every step, so a killed process leaves a readable record up to its last step and a
step costs the same on the first night as on the hundredth. Loading a log whose last run has no
exit entry closes that run as ``interrupted``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from robotlab.errors import ConfigError
from robotlab.history import log_file
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
from robotlab.history.log_file import FORMAT

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

log = logging.getLogger("robotlab.history")

ENTRIES_KEPT: Final = 10_000
"""How many entries before its last rewrite a log with no file keeps (the oldest go first): a few
MB of a long night's tasks, and more than a script ever looks back on."""


class HistoryLog:
    """A robot's entries, and the file they are saved to after every append (if any).

    Args:
        path: where to save; None keeps the log in memory only.
        robot: the robot's name, written into the document.
        entries: entries to start from (a loaded log).
        kept: with no file, how many entries before the last rewrite stay in memory.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, robot: str = "robot",
                 entries: Iterable[Entry] = (), kept: int = ENTRIES_KEPT) -> None:
        self.path = Path(path) if path else None
        self.robot = robot
        self.kept = kept
        self._entries: list[Entry] = []  # the entries in memory: every one after the dropped
        self._dropped = 0  # the oldest entries let go of (with a file, the first lines in it)
        self._lock = threading.RLock()
        self._rewrite_at = 0  # where rendering starts: the last rewrite
        self._last_system: str | None = None
        self._written = False  # the file holds every entry: an append adds only its own
        self._open: int | None = None
        self._note(list(entries))
        self._runs = max((e.run for e in self._entries if e.run is not None), default=0)
        ended = {e.run for e in self._entries if isinstance(e, ExitEntry)}
        if self._runs and self._runs not in ended:
            self._note([ExitEntry(run=self._runs, status=INTERRUPTED,
                                  error="the process ended before the run did")])

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
        robot, entries = log_file.read(path)
        return cls(path, robot, entries)

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Every entry so far, oldest first: with a file, those memory let go of read back from
        it; with none, the newest ``kept`` before the last rewrite and every one since."""
        with self._lock:
            return (*self._older(), *self._entries)

    @property
    def held(self) -> int:
        """How many entries are in memory (see the module's docstring)."""
        return len(self._entries)

    def messages(self) -> list[dict[str, Any]]:
        """The chat messages (no system message: the robot supplies its current one)."""
        with self._lock:
            since_rewrite = self._entries[self._rewrite_at:]
        return render(since_rewrite)

    def last_system(self) -> str | None:
        """The most recently recorded system message, if any."""
        return self._last_system

    def to_dict(self) -> dict[str, Any]:
        """The log as plain data: its format, robot and entries."""
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
        """Add entries (stamped with the open run) and save them."""
        with self._lock:
            stamped = [dataclasses.replace(e, run=self._open) if e.run is None else e
                       for e in entries]
            self._note(stamped)
            if self.path is None:
                self._let_go()
                return
            try:
                if self._written:
                    log_file.append(self.path, stamped)
                    self._let_go()
                else:
                    self.save()
            except OSError as exc:
                # A full disk must not kill the run: the log stays whole in memory, and the
                # next append writes the file whole again (over a line this one may have torn).
                self._written = False
                log.warning("cannot save the history of %s to %s: %s", self.robot, self.path,
                            exc)

    def _note(self, entries: list[Entry]) -> None:
        """Keep entries in memory, and where rendering starts and the last system message."""
        for entry in entries:
            if isinstance(entry, RewriteEntry):
                self._rewrite_at = len(self._entries)
            elif isinstance(entry, SystemEntry):
                self._last_system = entry.content
            self._entries.append(entry)

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
        """Write the file whole, atomically (temp file, fsync, rename); nothing without a path.

        Raises:
            OSError: the file cannot be written.
        """
        if self.path is None:
            return
        with self._lock:
            self._written = False
            log_file.write_whole(self.path, self.robot, [*self._older(), *self._entries])
            self._written = True
            self._let_go()

    def _let_go(self) -> None:
        """Let go of the entries before the last rewrite that memory need not hold: with a file
        (called once it holds every entry), all of them; else all but the newest ``kept``."""
        cut = self._rewrite_at - self.kept if self.path is None else self._rewrite_at
        if cut > 0:
            del self._entries[:cut]
            self._rewrite_at -= cut
            self._dropped += cut

    def _older(self) -> list[Entry]:
        """The entries memory let go of, read back from the file (none without one)."""
        if not self._dropped or self.path is None:
            return []
        try:
            _, on_file = log_file.read(self.path)
        except ConfigError as exc:
            log.warning("cannot read back the older entries of %s's history: %s", self.robot,
                        exc)
            return []
        if len(on_file) < self._dropped:
            log.warning("%s's history file %s lost %d of its older entries", self.robot,
                        self.path, self._dropped - len(on_file))
        return on_file[: self._dropped]
