"""``Reflector``: promote a robot's learnings into durable knowledge."""

from __future__ import annotations

from collections.abc import Iterable

from robotlab.knowledge.entry import Entry
from robotlab.knowledge.store import DurableStore

__all__ = ["Reflector"]


class Reflector:
    """Turns learnings into ``pattern`` entries of one domain (confidence 0.1)."""

    def __init__(self, store: DurableStore, domain: str) -> None:
        self.store = store
        self.domain = domain

    def reflect(self, learnings: Iterable[str]) -> list[Entry]:
        """Record each non-blank learning; one already known is confirmed instead of added."""
        return [self.store.record(Entry(content=text.strip(), reasoning="promoted from a learning",
                                        category="pattern", domain=self.domain, confidence=0.1))
                for text in learnings if text and text.strip()]
