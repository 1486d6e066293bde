"""Durable knowledge: the SQLite store, entries, the reflector, its tools, and convergence."""

from __future__ import annotations

from robotlab.knowledge.convergence import detected, similarity
from robotlab.knowledge.entry import Entry
from robotlab.knowledge.reflector import Reflector
from robotlab.knowledge.store import DurableStore
from robotlab.knowledge.tools import RecallKnowledge, RecordKnowledge

__all__ = ["DurableStore", "Entry", "RecallKnowledge", "RecordKnowledge", "Reflector", "detected",
           "similarity"]
