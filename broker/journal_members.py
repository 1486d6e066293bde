"""Who a broker's journal remembers: every instance that may hold work of an ``any`` message,
and the robot names seen most recently (whom a restarted broker holds messages for).

An ``any`` message runs on one instance of its name, and once: after a restart, a resend of one
that was handed out must go back to the instance that had it (working on it, or holding its
reply), never to another. The journal could write the owner of every such message before handing
it out, a commit on the path of every request to a pool. It writes the instance instead, once:
before the first ``any`` message is handed to it. After a restart the broker asks the instances
the file holds what they have (their HELLO's claims, :mod:`robotlab.broker.claims`), and holds
the ``any`` messages of their names until each has said or its hold ran out, as one of a standby
pair does at a takeover. An instance leaves the file when it says BYE, when it stayed away
longer than the hold, or when it did not come back within a restart's window: its work went to
another, or to the dead letters, by then.
"""

from __future__ import annotations

from time import time
from typing import Any


class FileMembers:
    """The instances the file holds (instance -> name), and the changes not committed yet."""

    def __init__(self) -> None:
        self.held: dict[str, str] = {}
        """What the file holds: committed."""
        self._joined: dict[str, str] = {}
        self._left: set[str] = set()

    def covers(self, instance: str, name: str) -> bool:
        """True when the file holds ``instance`` as ``name``; else it is noted for the next
        commit (and what waits on it waits for that commit)."""
        if self.held.get(instance) == name:
            return True
        self._joined[instance] = name
        self._left.discard(instance)
        return False

    def leave(self, instance: str) -> bool:
        """Let go of ``instance``; True when that changes the file."""
        self._joined.pop(instance, None)
        if instance not in self.held:
            return False
        self._left.add(instance)
        return True

    def pending(self) -> bool:
        """Whether the next commit has members to write."""
        return bool(self._joined or self._left)

    def rows(self, changes: dict[str, Any]) -> None:
        """Put the pending changes into a commit's change set: ``joined`` (instance, name) and
        ``left`` (instance,)."""
        changes["joined"] = list(self._joined.items())
        changes["left"] = [(instance,) for instance in self._left]

    def committed(self) -> None:
        """The pending changes are in the file."""
        self.held.update(self._joined)
        for instance in self._left:
            self.held.pop(instance, None)
        self._joined.clear()
        self._left.clear()


class FileNames:
    """The robot names seen since the last commit, each at a wall-clock time (which orders them
    across restarts, where the monotonic clock starts again); the file keeps the ``kept`` seen
    most recently."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self._seen: dict[str, float] = {}

    def seen(self, name: str) -> None:
        """``name`` said HELLO now."""
        self._seen[name] = time()

    def pending(self) -> bool:
        """Whether the next commit has names to write."""
        return bool(self._seen)

    def rows(self, changes: dict[str, Any]) -> None:
        """Put the names seen into a commit's change set: ``names`` (name, seen)."""
        changes["names"] = list(self._seen.items())

    def committed(self) -> None:
        """The names are in the file."""
        self._seen.clear()
