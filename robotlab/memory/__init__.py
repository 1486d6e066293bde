"""The reactive key-value memory robots and networks share, locally or across processes."""

from __future__ import annotations

from robotlab.memory.api import MemoryStore
from robotlab.memory.change import MemoryChange
from robotlab.memory.memory import Memory, create_memory
from robotlab.memory.remote import RemoteMemory
from robotlab.memory.service import MemoryService

__all__ = ["Memory", "MemoryChange", "MemoryService", "MemoryStore", "RemoteMemory",
           "create_memory"]
