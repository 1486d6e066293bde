"""A robot's conversation: the append-only versioned log saved after every step, and compaction."""

from __future__ import annotations

from robotlab.history.compaction import HistoryResult, compress_history, search_history
from robotlab.history.log import FORMAT, Entry, HistoryLog, entry_from_dict, render

__all__ = ["FORMAT", "Entry", "HistoryLog", "HistoryResult", "compress_history", "entry_from_dict",
           "render", "search_history"]
