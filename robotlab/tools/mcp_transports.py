"""How each MCP transport is opened: ``stdio`` starts the server as a child process;
``streamable-http`` (alias ``http``) and ``sse`` speak to a server at a ``url`` with the SDK's
HTTP clients (``headers``, and ``auth`` or ``auth_provider`` credentials as ``mcp_auth.py``
reads them, go with every request); ``ws`` and ``websocket`` use the SDK's websocket client if
it has one, else fail with ``DependencyError``.

An opener is called inside the client's event loop and returns the SDK's async context manager
of the read and write streams.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from robotlab.errors import DependencyError, MCPError

__all__ = ["TRANSPORTS", "Opener", "transport_opener"]

TRANSPORTS = ("stdio", "sse", "ws", "websocket", "streamable-http", "http")
SSE_READ_TIMEOUT = 24 * 3600.0
"""How long the SSE stream may stay silent: an idle server is not a lost one."""

Opener = Callable[[], AbstractAsyncContextManager[Any]]


def _stdio(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    if not transport.get("command"):
        raise MCPError(f"Invalid server config: stdio transport of {name} needs a command")

    def open_stdio() -> AbstractAsyncContextManager[Any]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        return stdio_client(StdioServerParameters(command=str(transport["command"]),
                                                  args=list(transport.get("args") or []),
                                                  env=transport.get("env")))

    return open_stdio


def _url(name: str, transport: dict[str, Any]) -> str:
    url = transport.get("url")
    if not url:
        raise MCPError(f"Invalid server config: {transport.get('type')} transport of {name} "
                       "needs a url")
    return str(url)


def _streamable_http(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    from robotlab.tools.mcp_auth import http_auth, http_client

    url = _url(name, transport)
    http_auth(name, transport)  # a bad auth config fails here, at connect, not in the loop

    @asynccontextmanager
    async def open_http() -> Any:
        from mcp.client.streamable_http import streamable_http_client

        async with (http_client(name, transport) as client,
                    streamable_http_client(url, http_client=client) as streams):
            yield streams

    return open_http


def _sse(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    from robotlab.tools.mcp_auth import http_auth

    url, headers = _url(name, transport), dict(transport.get("headers") or {})
    auth = http_auth(name, transport)

    def open_sse() -> AbstractAsyncContextManager[Any]:
        from mcp.client.sse import sse_client

        return sse_client(url, headers=headers, timeout=timeout,
                          sse_read_timeout=SSE_READ_TIMEOUT, auth=auth)

    return open_sse


def _websocket(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    url = _url(name, transport)
    try:
        from mcp.client.websocket import websocket_client  # type: ignore[import-not-found]
    except ImportError as exc:
        from importlib.metadata import version

        raise DependencyError(
            f"the {transport.get('type')} transport of MCP server {name} needs the mcp SDK's "
            f"websocket client (mcp.client.websocket, with the 'websockets' package: the 'ws' "
            f"extra of mcp 1.x); "
            f"the installed mcp {version('mcp')} has none"
        ) from exc
    return lambda: websocket_client(url)


OPENERS: dict[str, Callable[[str, dict[str, Any], float], Opener]] = {
    "stdio": _stdio,
    "streamable-http": _streamable_http,
    "http": _streamable_http,
    "sse": _sse,
    "ws": _websocket,
    "websocket": _websocket,
}


def transport_opener(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    """What opens the SDK transport of one server config (its read and write streams).

    Raises:
        MCPError: an unknown type, or a missing ``command``/``url``.
        DependencyError: the transport needs a client the installed SDK lacks (websocket).
    """
    kind = transport.get("type")
    builder = OPENERS.get(str(kind))
    if builder is None:
        raise MCPError(f"Invalid transport type: {kind}. Must be one of: {', '.join(TRANSPORTS)}")
    return builder(name, transport, timeout)
