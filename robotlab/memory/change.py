"""The record a memory subscriber receives, and the glob patterns subscriptions match with.

Read ``robotlab/memory/memory.py`` first; this module holds the plain-data parts that also cross the
bus between a memory service and its remote members (``robotlab/memory/remote.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = ["MemoryChange", "compile_pattern"]


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class MemoryChange:
    """One change to one memory key, as passed to subscription callbacks.

    Attributes:
        key: the key that changed.
        value: the new value (``None`` when the key was deleted).
        previous: the value before the change (``None`` when the key was created).
        writer: name of the robot that wrote it (the memory's ``current_writer`` then).
        network_name: name of the network the memory belongs to, if any.
        timestamp: when the change was made (UTC).
        correlation_id: optional id for tracing a change back to its cause.
    """

    key: str
    value: Any
    previous: Any = None
    writer: str | None = None
    network_name: str | None = None
    timestamp: datetime = field(default_factory=_now)
    correlation_id: str | None = None

    def is_created(self) -> bool:
        """True when the key had no value before and has one now (Ruby ``created?``)."""
        return self.previous is None and self.value is not None

    def is_updated(self) -> bool:
        """True when a value replaced another value (Ruby ``updated?``)."""
        return self.previous is not None and self.value is not None

    def is_deleted(self) -> bool:
        """True when a value was removed (Ruby ``deleted?``)."""
        return self.value is None and self.previous is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the timestamp as ISO 8601); ``None`` fields are left out, as in Ruby."""
        data = {
            "key": self.key,
            "value": self.value,
            "previous": self.previous,
            "writer": self.writer,
            "network_name": self.network_name,
            "timestamp": self.timestamp.isoformat(),
            "correlation_id": self.correlation_id,
        }
        return {k: v for k, v in data.items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryChange:
        """Rebuild a change from :meth:`to_dict` output."""
        stamp = data.get("timestamp")
        return cls(
            key=str(data["key"]),
            value=data.get("value"),
            previous=data.get("previous"),
            writer=data.get("writer"),
            network_name=data.get("network_name"),
            timestamp=datetime.fromisoformat(stamp) if stamp else _now(),
            correlation_id=data.get("correlation_id"),
        )


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a subscription glob: ``*`` matches any run of characters, ``?`` one character.

    The match is anchored at both ends and nothing else is special (unlike ``fnmatch``,
    brackets are literal), so ``"analysis:*"`` matches ``"analysis:1"`` but not
    ``"x:analysis:1"``.
    """
    parts = []
    for char in pattern:
        if char == "*":
            parts.append(".*")
        elif char == "?":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL)
