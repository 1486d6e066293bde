"""Tools a robot offers its model: ``Tool`` and ``@tool``, which tools a run sends, MCP servers as
tool sources, and the shipped ``AskUser`` (attach an instance with ``local_tools=[...]``)."""

from __future__ import annotations

from robotlab.tools.ask_user import AskUser
from robotlab.tools.mcp import ToolSource
from robotlab.tools.tool import Tool, tool

__all__ = ["AskUser", "Tool", "ToolSource", "tool"]
