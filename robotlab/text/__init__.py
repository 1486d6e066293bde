"""Text scoring shared by history search, compaction and MCP server selection, and the file
names models write in prose."""

from __future__ import annotations

from robotlab.text.similarity import cosine, term_vector

__all__ = ["cosine", "term_vector"]
