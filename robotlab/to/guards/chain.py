"""The guard chain every tool call of an iteration goes through.

Order: confine the path to the repository, the grader lock (always on), then with local
guards: checkpoint, WriteGuard (no ``write`` over an existing file the robot has not read,
unless ``write_guard=False``), read-before-edit; then the tool; then the read-set and the
quality monitor. State lasts for the whole iteration (nudges and repairs included), because
one child process runs the whole iteration.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robotlab.to.guards.checkpoint import Checkpoints
from robotlab.to.guards.grader_lock import GraderLock
from robotlab.to.guards.paths import inside, raw_path, relative, resolve
from robotlab.to.guards.quality import QualityMonitor

PATH_TOOLS = ("read", "write", "edit")
Handler = Callable[[dict[str, Any]], str]
Observer = Callable[[dict[str, Any]], None]
"""Told of every tool call: ``{"event": "tool:call", ...}`` before, ``"tool:result"`` after."""
TARGET_LIMIT = 120

WRITE_REFUSAL = (
    "Refused -- {path} already exists and you have not read it. Read the file, then use edit "
    "with the exact current text as old_text (or write its whole new content)."
)
EDIT_REFUSAL = (
    "Refused -- {path} must be read before edit. Read it first, match whitespace exactly and "
    "include 2-3 lines of context in old_text. Do not guess."
)
OUTSIDE_REFUSAL = "Refused -- {path} is outside the repository. Work only on files inside it."


@dataclasses.dataclass
class GuardSettings:
    """Which guards are on."""

    root: str
    local_guards: bool = False
    write_guard: bool = True
    checkpoint_dir: str | None = None
    shown: tuple[str, ...] = ()
    """Files whose content the prompt showed: they count as read (read-before-edit)."""


class GuardChain:
    """Wraps tool handlers with the guards of one iteration."""

    def __init__(self, settings: GuardSettings, lock: GraderLock) -> None:
        self.settings = settings
        self.root = os.path.realpath(settings.root)
        self.lock = lock
        self.known: set[str] = {resolve(self.root, name) for name in settings.shown}
        self.monitor = QualityMonitor()
        self.checkpoints = Checkpoints(settings.checkpoint_dir or Path(self.root) / ".checkpoints")
        self.observer: Observer | None = None

    def wrap(self, name: str, handler: Callable[[str, dict[str, Any]], str] | Handler) -> Handler:
        """A handler that runs ``handler`` behind the guards. Path tools get ``(path, args)``."""

        def guarded(args: dict[str, Any]) -> str:
            target = tool_target(name, args)
            self._tell({"event": "tool:call", "name": name, "target": target})
            try:
                reply = self.call(name, args, handler)
            except Exception as exc:  # a tool bug is an observation for the model, not a crash
                reply = f"Error ({name}): {exc}"
            self.monitor.record(name, args)
            outcome = tool_outcome(reply)
            failed = outcome != "ok" and reply.strip()
            reason = reply.strip().splitlines()[0][:200] if failed else None
            self._tell({"event": "tool:result", "name": name, "target": target, "outcome": outcome,
                        "reason": reason})
            return reply

        return guarded

    def _tell(self, event: dict[str, Any]) -> None:
        if self.observer is not None:
            self.observer(event)

    def call(self, name: str, args: dict[str, Any], handler: Any) -> str:
        """Run one tool call through the guards (without the quality monitor)."""
        if name in PATH_TOOLS:
            return self._path_call(name, args, handler)
        if name == "bash" and self.lock:
            locked = self.lock.refuses_command(str(args.get("command", "")))
            if locked:
                return self.lock.refusal(locked)
        return handler(args)

    def _path_call(self, name: str, args: dict[str, Any], handler: Any) -> str:
        raw = raw_path(args)
        if raw is None:
            return f"Error: {name} needs a path"
        path = resolve(self.root, raw)
        if not inside(self.root, path):
            return OUTSIDE_REFUSAL.format(path=raw)
        refusal = self._refusal(name, path)
        if refusal:
            return refusal  # a refused write does not count as having read the file
        if name in ("write", "edit") and self.settings.local_guards:
            self.checkpoints.touch(path)
        reply = handler(path, args)
        self.known.add(path)
        return reply

    def _refusal(self, name: str, path: str) -> str | None:
        if name in ("write", "edit") and self.lock and self.lock.locks(path):
            return self.lock.refusal(path)
        if not self.settings.local_guards:
            return None
        shown = relative(self.root, path)
        if (name == "write" and self.settings.write_guard and os.path.exists(path)
                and path not in self.known):
            return WRITE_REFUSAL.format(path=shown)
        if name == "edit" and path not in self.known:
            return EDIT_REFUSAL.format(path=shown)
        return None


def tool_target(name: str, args: dict[str, Any]) -> str:
    """What a call works on, for people: the path, the command, or the question (clipped)."""
    for key in ("path", "file_path", "command", "question", "summary"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            return text if len(text) <= TARGET_LIMIT else text[: TARGET_LIMIT - 1] + "…"
    return ""


def tool_outcome(reply: str) -> str:
    """``refused`` (a guard said no), ``error`` (the tool failed) or ``ok``, from the reply the
    model reads."""
    head = reply.lstrip()
    if head.startswith("Refused"):
        return "refused"
    return "error" if head.startswith("Error") else "ok"
