"""A dict-backed ``ToolSource``: stands in for an MCP server in tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from robotlab.tools.tool import Tool

__all__ = ["DictToolSource"]


class DictToolSource:
    """Offers one tool per entry of ``tools`` (name to a handler taking the argument dict).

    Args:
        name: the server name the tools report as their ``mcp``.
        tools: handlers by tool name.
        schemas: optional JSON schemas by tool name.
    """

    def __init__(self, name: str, tools: dict[str, Callable[[dict[str, Any]], Any]],
                 schemas: dict[str, dict[str, Any]] | None = None) -> None:
        self.name = name
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.closed = False
        self._tools = [
            Tool.create(name=tool_name, description=f"{tool_name} from {name}",
                        parameters=(schemas or {}).get(tool_name),
                        handler=self._recording(tool_name, handler), mcp=name)
            for tool_name, handler in tools.items()
        ]

    def _recording(self, tool_name: str,
                   handler: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        def call(arguments: dict[str, Any]) -> Any:
            self.calls.append((tool_name, dict(arguments)))
            return handler(arguments)

        return call

    def list_tools(self) -> list[Tool]:
        """The tools, ready to attach."""
        return list(self._tools) if not self.closed else []

    def close(self) -> None:
        """Stop offering tools."""
        self.closed = True
