"""The reserved keys as a memory's attributes: data, results, messages, session_id, cache.

``Memory`` reads and writes the reserved values (``state.py``) by key, as any other key; this
is the other way in, by name, and what a run does with its results: append one, replace them,
read the ones after a saved index, turn them into a conversation history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from robotlab.memory.state import ReservedValues, ResponseCache, StateProxy

__all__ = ["ReservedKeyMethods"]


class ReservedKeyMethods:
    """The reserved-key attributes of ``Memory``, over the values it holds in ``_reserved``."""

    _reserved: ReservedValues

    @property
    def data(self) -> StateProxy:
        """The ``data`` reserved key: attribute- and item-style runtime data."""
        return self._reserved.data

    @property
    def results(self) -> list[Any]:
        """A copy of the robot results gathered so far."""
        return self._reserved.results()

    @property
    def messages(self) -> list[Any]:
        """A copy of the conversation messages."""
        return self._reserved.messages()

    @property
    def session_id(self) -> str | None:
        """The conversation session identifier."""
        return self._reserved.session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        self._reserved.write("session_id", value)

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache, or ``None`` when built with ``enable_cache=False``."""
        return self._reserved.cache

    # -- results and history ---------------------------------------------------------------

    def append_result(self, result: Any) -> Self:
        """Add one robot result to ``results``."""
        self._reserved.append_result(result)
        return self

    def set_results(self, results: list[Any]) -> Self:
        """Replace ``results`` (used when loading a saved run)."""
        self._reserved.write("results", results)
        return self

    def results_from(self, start: int) -> list[Any]:
        """The results from index ``start`` on (for incremental saves)."""
        return self._reserved.results(start)

    def format_history(self, formatter: Callable[[Any], list[Any]] | None = None) -> list[Any]:
        """The messages, then each result turned into messages by ``formatter``.

        The default formatter takes a result's ``output`` list plus its ``tool_calls``.
        """
        formatter = formatter or _default_formatter
        history = self.messages
        for result in self.results:
            history.extend(formatter(result))
        return history


def _default_formatter(result: Any) -> list[Any]:
    return [*getattr(result, "output", []), *getattr(result, "tool_calls", [])]
