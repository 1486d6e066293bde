"""The quality monitor: a robot calling the same tool with the same arguments over and over
has stopped making progress; the fourth identical call in a row ends the attempt."""

from __future__ import annotations

import json
from typing import Any

from robotlab.errors import QualityError

REPEAT_LIMIT = 2


class QualityMonitor:
    """Counts identical consecutive tool calls (argument order does not matter)."""

    def __init__(self) -> None:
        self._last: str | None = None
        self.repeats = 0

    def record(self, name: str, args: dict[str, Any]) -> None:
        """Record one call; raises QualityError on the fourth identical call in a row."""
        key = json.dumps({"name": name, "args": args}, sort_keys=True, default=str)
        self.repeats = self.repeats + 1 if key == self._last else 0
        self._last = key
        if self.repeats > REPEAT_LIMIT:
            raise QualityError("repeated_tool_call")

    @staticmethod
    def empty_reply(reply: str | None, tool_calls: int) -> QualityError | None:
        """An error for a model turn with neither text nor tool calls."""
        if tool_calls == 0 and not (reply or "").strip():
            return QualityError("empty_response")
        return None
