"""``RecallKnowledge`` and ``RecordKnowledge``: the model reads and writes durable knowledge.

Each tool uses the store it was built with, else the running robot's ``durable_store``
attribute; with neither it answers "No durable store configured on this robot."
"""

from __future__ import annotations

from typing import Any

from robotlab.knowledge.entry import Entry
from robotlab.knowledge.store import DurableStore
from robotlab.tools.tool import Tool

__all__ = ["NO_STORE", "RecallKnowledge", "RecordKnowledge"]

NO_STORE = "No durable store configured on this robot."


class _KnowledgeTool(Tool):
    def __init__(self, store: DurableStore | None = None) -> None:
        super().__init__()
        self.store = store

    def _store(self) -> DurableStore | None:
        return self.store if self.store is not None else getattr(self.robot, "durable_store", None)


class RecallKnowledge(_KnowledgeTool):
    """Look up what was learned before; each hit found is confirmed (it proved useful again)."""

    name = "recall_knowledge"
    description = ("Recall durable knowledge from past work that matches a query, optionally in "
                   "one domain. Use it before deciding something you may have decided before.")
    parameters = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "words to look for"},
                       "domain": {"type": "string", "description": "only this domain"}},
        "required": ["query"],
    }

    def execute(self, query: str, domain: str | None = None, **_: Any) -> str:
        """The matching entries, best first, one line each."""
        store = self._store()
        if store is None:
            return NO_STORE
        hits = [store.confirm(entry) for entry in store.recall(query, domain=domain)]
        if not hits:
            return f"No relevant past knowledge found for: {query}. When in doubt, skip."
        lines = [f"[{e.category}/conf:{e.confidence:.1f}] {e.content} — {e.reasoning}"
                 for e in hits]
        return "Relevant past knowledge:\n" + "\n".join(lines)


class RecordKnowledge(_KnowledgeTool):
    """Keep a lesson for future runs, in a domain; recording it again raises its confidence."""

    name = "record_knowledge"
    description = ("Record a durable lesson (what, why, a category such as pattern or pitfall, and "
                   "a domain) so later runs can recall it.")
    parameters = {
        "type": "object",
        "properties": {"content": {"type": "string"}, "reasoning": {"type": "string"},
                       "category": {"type": "string"}, "domain": {"type": "string"}},
        "required": ["content", "reasoning", "category", "domain"],
    }

    def execute(self, content: str, reasoning: str, category: str, domain: str, **_: Any) -> str:
        """Record (or confirm) the entry and teach the running robot the lesson too."""
        store = self._store()
        if store is None:
            return NO_STORE
        entry = store.record(Entry(content=content, reasoning=reasoning, category=category,
                                   domain=domain))
        if self.robot is not None:
            self.robot.learn(f"{content} ({domain})")
        return (f"Recorded [{entry.category}/conf:{entry.confidence:.1f}] {entry.content} "
                f"in {entry.domain}.")
