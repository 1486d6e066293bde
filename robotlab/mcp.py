"""MCP servers as tool sources: the ``ToolSource`` protocol and the robot's connection step.

A robot resolves its ``mcp`` lists like its tool lists ("inherit" / "none" / lists), then asks
each resolved server for tools through a ``ToolSource``. Connection failures are recorded in
``failed_mcp_server_names`` and never raised; later runs retry only the failed servers.

A server config is ``{"name": ..., "transport": {"type": "stdio", "command": ..., "args": [...],
"env": {...}}, "timeout": seconds}``. The stdio transport is served by
``robotlab.mcp_client.StdioToolSource`` (the official ``mcp`` SDK); the remote transports
(``sse``, ``ws``, ``websocket``, ``streamable-http``, ``http``) are recognised but not built
yet, and fail with "MCP support is not built yet". ``inject`` adopts sources connected
elsewhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from robotlab.errors import MCPError
from robotlab.tool import Tool

__all__ = ["DISCOVERY_THRESHOLD", "MCPConnections", "ToolSource", "connect_source", "discover", "server_name"]

log = logging.getLogger("robotlab.mcp")
NOT_BUILT = "MCP support is not built yet"
DISCOVERY_THRESHOLD = 0.05


class ToolSource(Protocol):
    """Something that lists tools and calls them (an MCP client, or a test double)."""

    name: str

    def list_tools(self) -> list[Tool]:
        """The tools this source offers, ready to attach."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


def server_name(server: Any) -> str:
    """The name a server config is known by (the value itself for a bare string)."""
    if isinstance(server, dict):
        return str(server.get("name", "?"))
    return str(server)


def connect_source(server: Any) -> ToolSource:
    """Connect to one MCP server.

    Raises:
        MCPError: the config is invalid, or the server cannot be reached.
    """
    from robotlab.mcp_client import TRANSPORTS, StdioToolSource

    if not isinstance(server, dict) or "name" not in server or not isinstance(server.get("transport"), dict):
        raise MCPError(f"Invalid server config: {server!r}")
    transport = server["transport"]
    kind = transport.get("type")
    if kind not in TRANSPORTS:
        raise MCPError(f"Invalid transport type: {kind}. Must be one of: {', '.join(TRANSPORTS)}")
    if kind != "stdio":
        raise MCPError(f"{NOT_BUILT} for the {kind} transport")
    if not transport.get("command"):
        raise MCPError(f"Invalid server config: stdio transport of {server['name']} needs a command")
    return StdioToolSource(str(server["name"]), str(transport["command"]), transport.get("args"),
                           transport.get("env"), server.get("timeout")).connect()


def discover(servers: list[Any], message: str | None, threshold: float = DISCOVERY_THRESHOLD) -> list[Any]:
    """The servers whose ``"<name> <description>"`` is relevant to ``message`` (TF cosine).

    The list comes back unchanged when it is empty, the message is blank, no server has a
    description, or nothing scores ``threshold`` or more.
    """
    from robotlab.history import cosine, term_vector

    described = [s for s in servers if isinstance(s, dict) and s.get("description")]
    if not servers or not (message or "").strip() or not described:
        return servers
    query = term_vector(message or "")
    chosen = [s for s in servers if isinstance(s, dict)
              and cosine(term_vector(f"{s.get('name', '')} {s.get('description') or ''}"), query) >= threshold]
    return chosen or servers


@dataclass
class MCPConnections:
    """A robot's MCP clients, their tools, and the servers that failed (with reasons)."""

    sources: dict[str, ToolSource] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    attempted: bool = False

    @property
    def tools(self) -> list[Tool]:
        """Tools from every connected source, in connection order."""
        return [tool for source in self.sources.values() for tool in source.list_tools()]

    def failed_names(self) -> list[str]:
        """Names of the servers that failed to connect."""
        return list(self.failures)

    def ensure(self, servers: list[Any], message: str | None = None, *, discovery: bool = False) -> None:
        """Connect ``servers`` on the first call; on later calls retry only the failed ones.

        With ``discovery``, the first call connects only the servers relevant to ``message``.
        """
        if self.attempted:
            servers = [s for s in servers if server_name(s) in self.failures]
        elif discovery:
            servers = discover(servers, message)
        self.attempted = self.attempted or bool(servers)
        for server in servers:
            name = server_name(server)
            try:
                self.sources[name] = connect_source(server)
                self.failures.pop(name, None)
            except MCPError as exc:
                log.warning("MCP server %s failed to connect: %s", name, exc)
                self.failures[name] = str(exc)

    def inject(self, sources: list[ToolSource]) -> None:
        """Adopt sources connected elsewhere."""
        for source in sources:
            self.sources[source.name] = source
            self.failures.pop(source.name, None)

    def close(self) -> None:
        """Close every source."""
        for source in self.sources.values():
            source.close()
        self.sources.clear()
