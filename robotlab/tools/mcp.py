"""MCP servers as tool sources: the ``ToolSource`` protocol and the robot's connection step.

A robot resolves its ``mcp`` lists like its tool lists ("inherit" / "none" / lists), then asks
each resolved server for tools through a ``ToolSource``. Connection failures are recorded in
``failed_mcp_server_names`` and never raised; later runs retry only the failed servers.

A server config is ``{"name": ..., "transport": {"type": "stdio", "command": ..., "args": [...],
"env": {...}}, "timeout": seconds}``, or for a remote server ``{"type": "streamable-http"
(or "http", "sse", "ws", "websocket"), "url": ..., "headers": {...}, "auth": ...}`` (credentials:
``mcp_auth.py``). Every transport is served by ``robotlab.tools.mcp_client.MCPClient`` over the
official ``mcp`` SDK. ``inject`` adopts sources connected elsewhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from robotlab.errors import DependencyError, MCPError
from robotlab.tools.tool import Tool

__all__ = ["DISCOVERY_THRESHOLD", "MCPConnections", "ToolSource", "connect_source", "discover",
           "server_name"]

log = logging.getLogger("robotlab.tools.mcp")
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
        DependencyError: the transport needs a client the installed ``mcp`` SDK lacks.
    """
    from robotlab.tools.mcp_auth import person_wait
    from robotlab.tools.mcp_client import MCPClient, server_timeout, transport_opener

    if (not isinstance(server, dict) or "name" not in server
            or not isinstance(server.get("transport"), dict)):
        raise MCPError(f"Invalid server config: {server!r}")
    name, transport, timeout = str(server["name"]), server["transport"], server.get("timeout")
    opener = transport_opener(name, transport, server_timeout(timeout))
    remote = transport.get("type") != "stdio"
    target = str(transport.get("url") if remote else transport.get("command"))
    client = MCPClient(name, opener, timeout, target=target, remote=remote)
    client.connect_timeout += person_wait(transport)
    return client.connect()


def discover(servers: list[Any], message: str | None,
             threshold: float = DISCOVERY_THRESHOLD) -> list[Any]:
    """The servers whose ``"<name> <description>"`` is relevant to ``message`` (TF cosine).

    The list comes back unchanged when it is empty, the message is blank, no server has a
    description, or nothing scores ``threshold`` or more.
    """
    from robotlab.text.similarity import cosine, term_vector

    described = [s for s in servers if isinstance(s, dict) and s.get("description")]
    if not servers or not (message or "").strip() or not described:
        return servers
    query = term_vector(message or "")
    chosen = [s for s in servers if isinstance(s, dict)
              and cosine(term_vector(f"{s.get('name', '')} {s.get('description') or ''}"),
                         query) >= threshold]
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

    def ensure(self, servers: list[Any], message: str | None = None, *,
               discovery: bool = False) -> None:
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
            except (MCPError, DependencyError) as exc:
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
