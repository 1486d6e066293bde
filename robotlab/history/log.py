"""A robot's conversation as an append-only, versioned log of frozen entries, saved after every step.

Entry kinds: ``system`` (the system message a run started with, recorded when it changes),
``task`` (the user message), ``reply`` (one model answer and its usage), ``tool_call`` (one call
that reply asked for), ``tool_result``, ``exit`` (how a run ended: ``completed``, ``failed`` or
``interrupted``) and ``rewrite`` (a transcript replacing everything before it: compaction,
``replace_messages``, ``clear_messages``, ``compress_history``). Nothing is ever removed.

Chat messages are rendered on demand: the last rewrite's messages, then every later entry of a
run that did not fail (a reply and the tool calls after it form one assistant message). So a
run that raises leaves the conversation as it was, while the log keeps what it did.

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
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from robotlab.errors import ConfigError

__all__ = [
    "COMPLETED",
    "FAILED",
    "FORMAT",
    "INTERRUPTED",
    "Entry",
    "ExitEntry",
    "HistoryLog",
    "ReplyEntry",
    "RewriteEntry",
    "SystemEntry",
    "TaskEntry",
    "ToolCallEntry",
    "ToolResultEntry",
]

log = logging.getLogger("robotlab.history.compaction")

FORMAT = 1
"""The version of the JSON document; a different one is refused on load."""
COMPLETED, FAILED, INTERRUPTED = "completed", "failed", "interrupted"


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One step of the conversation: which run it belongs to (None outside runs) and when."""

    kind: ClassVar[str] = ""
    run: int | None = None
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, with ``kind`` first."""
        return {"kind": self.kind, **dataclasses.asdict(self)}

    def message(self) -> dict[str, Any] | None:
        """The chat message this entry renders to, if any."""
        return None


@dataclass(frozen=True, kw_only=True)
class SystemEntry(Entry):
    """The system message a run started with."""

    kind: ClassVar[str] = "system"
    content: str


@dataclass(frozen=True, kw_only=True)
class TaskEntry(Entry):
    """The user message of a run (with any learnings prepended, as the model read it)."""

    kind: ClassVar[str] = "task"
    content: Any

    def message(self) -> dict[str, Any]:
        """A user message."""
        return {"role": "user", "content": self.content}


@dataclass(frozen=True, kw_only=True)
class ReplyEntry(Entry):
    """One model answer; its tool calls follow as ``ToolCallEntry``s."""

    kind: ClassVar[str] = "reply"
    content: str | None = None
    reasoning: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    def message(self) -> dict[str, Any]:
        """An assistant message (the tool calls are attached while rendering)."""
        return {"role": "assistant", "content": self.content or ""}


@dataclass(frozen=True, kw_only=True)
class ToolCallEntry(Entry):
    """A tool call the reply before it asked for, recorded before the tool runs."""

    kind: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def call_message(self) -> dict[str, Any]:
        """The OpenAI-format ``tool_calls`` item."""
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": json.dumps(self.arguments)}}


@dataclass(frozen=True, kw_only=True)
class ToolResultEntry(Entry):
    """What a tool returned (or the error text the model reads)."""

    kind: ClassVar[str] = "tool_result"
    id: str
    name: str
    content: str

    def message(self) -> dict[str, Any]:
        """A tool message answering the call with the same id."""
        return {"role": "tool", "tool_call_id": self.id, "name": self.name, "content": self.content}


@dataclass(frozen=True, kw_only=True)
class ExitEntry(Entry):
    """How a run ended; a run that did not complete is left out of the rendered messages."""

    kind: ClassVar[str] = "exit"
    status: str
    reply: str | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class RewriteEntry(Entry):
    """Chat messages that replace the whole transcript before this entry."""

    kind: ClassVar[str] = "rewrite"
    reason: str
    messages: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the messages as a list)."""
        return {**super().to_dict(), "messages": [dict(m) for m in self.messages]}


KINDS: dict[str, type[Entry]] = {
    "system": SystemEntry,
    "task": TaskEntry,
    "reply": ReplyEntry,
    "tool_call": ToolCallEntry,
    "tool_result": ToolResultEntry,
    "exit": ExitEntry,
    "rewrite": RewriteEntry,
}


def entry_from_dict(data: dict[str, Any]) -> Entry:
    """Rebuild an entry from ``Entry.to_dict`` output.

    Raises:
        ConfigError: an unknown kind or field.
    """
    values = dict(data)
    cls = KINDS.get(str(values.pop("kind", "")))
    if cls is None:
        raise ConfigError(f"unknown history entry kind {data.get('kind')!r}; known: {', '.join(KINDS)}")
    if cls is RewriteEntry:
        values["messages"] = tuple(values.get("messages") or ())
    try:
        return cls(**values)
    except TypeError as exc:
        raise ConfigError(f"bad {cls.kind} history entry: {exc}") from exc


def render(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The chat messages of ``entries``: after the last rewrite, runs that did not fail."""
    entries = list(entries)
    start = max((i for i, e in enumerate(entries) if isinstance(e, RewriteEntry)), default=-1)
    messages = [dict(m) for m in entries[start].messages] if start >= 0 else []  # type: ignore[attr-defined]
    dropped = {e.run for e in entries if isinstance(e, ExitEntry) and e.status != COMPLETED}
    reply: ReplyEntry | None = None
    for entry in entries[start + 1:]:
        if entry.run is not None and entry.run in dropped:
            continue
        if isinstance(entry, ToolCallEntry) and reply is not None:
            assistant = messages[-1]
            if "tool_calls" not in assistant:
                assistant["content"] = reply.content
            assistant.setdefault("tool_calls", []).append(entry.call_message())
            continue
        message = entry.message()
        if message is not None:
            messages.append(message)
            reply = entry if isinstance(entry, ReplyEntry) else None
    return messages


def _line(entry: Entry) -> str:
    return json.dumps(entry.to_dict(), ensure_ascii=False, default=str)


def exit_status(error: BaseException | None) -> str:
    """``completed`` without an error, ``failed`` for an ``Exception``, else ``interrupted``."""
    if error is None:
        return COMPLETED
    return FAILED if isinstance(error, Exception) else INTERRUPTED


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
            raise ConfigError(f"{str(path)!r} is not a robotlab history of format {FORMAT} (format: {found!r})")
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
        return {"format": FORMAT, "robot": self.robot, "entries": [e.to_dict() for e in self.entries]}

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
            stamped = [dataclasses.replace(e, run=self._open) if e.run is None else e for e in entries]
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
        self.append(RewriteEntry(run=None, reason=reason, messages=tuple(dict(m) for m in messages)))

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
