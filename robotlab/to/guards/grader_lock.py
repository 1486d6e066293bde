"""The grader lock: the files a run is scored against cannot be changed by the robot.

Locked files may be read and run. Writes and edits to them are refused, bash commands
that would change them are refused, a locked path that does not exist yet is locked
against creation, and ``changed()`` compares content hashes so the orchestrator can roll
back any change that slipped through (a script the robot wrote and then ran, say).
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import os
import re
from pathlib import Path

from robotlab.to.guards.paths import relative

REFUSAL = (
    "Refused -- {path} is a locked grader artifact (the criteria you are scored against). "
    "You must not create, edit, or delete it. You may read and run it. Improve the work being "
    "scored instead."
)
_GLOB_CHARS = re.compile(r"[*?\[]")
_MUTATING = re.compile(
    r"(^|[\s;&|(`])(rm|mv|cp|tee|truncate|touch|ln|install|dd|chmod|chown|shred|unlink|"
    r"sed\s+(-\w+\s+)*-i|perl\s+(-\w+\s+)*-\w*i|git\s+(checkout|restore|rm|mv|apply|reset|stash))\b"
    r"|write_text|write_bytes|open\([^)]*['\"][wax]"
)


class GraderLock:
    """The locked set of one run: literal paths and glob patterns relative to ``root``."""

    def __init__(self, root: str | Path, patterns: list[str]) -> None:
        self.root = os.path.realpath(root)
        self.patterns = [p for p in dict.fromkeys(patterns) if p and p.strip()]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def files(self) -> list[str]:
        """Absolute paths locked now: every glob match, and every literal path (existing or not)."""
        found: list[str] = []
        for pattern in self.patterns:
            absolute = os.path.normpath(os.path.join(self.root, pattern))
            if _GLOB_CHARS.search(pattern):
                found += sorted(os.path.normpath(p) for p in glob.glob(absolute, recursive=True))
            else:
                found.append(absolute)
        return list(dict.fromkeys(found))

    def locks(self, path: str) -> bool:
        """True when ``path`` (absolute) is locked, including not-yet-existing glob matches."""
        path = os.path.normpath(path)
        rel = os.path.relpath(path, self.root)
        return path in self.files() or any(fnmatch.fnmatch(rel, p) for p in self.patterns
                                           if _GLOB_CHARS.search(p))

    def refusal(self, path: str) -> str:
        """The text a refused tool call returns."""
        return REFUSAL.format(path=relative(self.root, path))

    def _mentioned(self, command: str) -> list[str]:
        mentioned = []
        for path in self.files():
            names = {path, os.path.relpath(path, self.root), os.path.basename(path)}
            if any(name in command for name in names):
                mentioned.append(path)
        return mentioned

    def refuses_command(self, command: str) -> str | None:
        """The locked path a shell command would change, or None when it may run."""
        for path in self._mentioned(command):
            names = [re.escape(n)
                     for n in (path, os.path.relpath(path, self.root), os.path.basename(path))]
            redirect = re.search(r">>?\s*['\"]?(\S*/)?(" + "|".join(names) + r")\b", command)
            if redirect or _MUTATING.search(command):
                return path
        return None

    def snapshot(self) -> dict[str, str | None]:
        """Content hash of each locked file (None when absent), to compare after an iteration."""
        return {path: _digest(path) for path in self.files()}

    def changed(self, before: dict[str, str | None]) -> list[str]:
        """Locked paths (relative) whose content, existence or membership changed since
        ``before``."""
        after = self.snapshot()
        paths = sorted(set(before) | set(after))
        return [relative(self.root, p) for p in paths if before.get(p) != after.get(p)]


def _digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
