"""Doom-loop detection: notice a model calling the same tool (or cycle of tools) with no progress.

Always on. It never raises: on detection the warning is added to the tool result the model
reads, and the sequence starts over.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_THRESHOLD", "MAX_PERIOD", "DoomLoopDetector", "annotate"]

DEFAULT_THRESHOLD = 3
MAX_PERIOD = 10


class DoomLoopDetector:
    """Tracks tool names and spots repeats (a a a) and cycles (a b a b a b)."""

    def __init__(self, threshold: int | None = None) -> None:
        self.threshold = threshold if threshold and threshold > 0 else DEFAULT_THRESHOLD
        self.names: list[str] = []

    def track(self, name: str) -> None:
        """Record one executed tool."""
        self.names.append(name)

    def reset(self) -> None:
        """Forget the sequence."""
        self.names.clear()

    def _repeat(self) -> str | None:
        tail = self.names[-self.threshold:]
        if len(tail) == self.threshold and len(set(tail)) == 1:
            return tail[0]
        return None

    def _cycle(self) -> list[str] | None:
        for period in range(2, min(MAX_PERIOD, len(self.names) // self.threshold) + 1):
            tail = self.names[-period * self.threshold:]
            pattern = tail[:period]
            if len(set(pattern)) > 1 and tail == pattern * self.threshold:
                return pattern
        return None

    def doom_loop(self) -> bool:
        """True when the last names repeat or cycle ``threshold`` times."""
        return self._repeat() is not None or self._cycle() is not None

    def warning(self) -> str | None:
        """The text to show the model, or None when there is no loop."""
        name = self._repeat()
        advice = ("You appear to be stuck in a loop. Try a fundamentally different approach, "
                  "use a different tool, or ask for clarification.")
        if name is not None:
            return (f"Tool '{name}' has been called {self.threshold}+ times consecutively with no "
                    "progress. " + advice)
        cycle = self._cycle()
        if cycle is not None:
            pattern = " → ".join(cycle)
            return (f"Tool call pattern [{pattern}] has repeated {self.threshold}+ times. "
                    + advice)
        return None


def annotate(result: Any, warning: str) -> Any:
    """Embed ``warning`` in a tool result: appended to text, a key of a dict, else unchanged."""
    if isinstance(result, str):
        return f"{result}\n\n⚠️ {warning}"
    if isinstance(result, dict):
        return {**result, "_doom_loop_warning": warning}
    return result
