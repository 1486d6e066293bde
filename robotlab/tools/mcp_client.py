"""MCP clients over the official ``mcp`` SDK, as synchronous ``ToolSource``s, for every transport.

``stdio`` starts the server as a child process; ``streamable-http`` (alias ``http``) and ``sse``
speak to a server at a ``url`` with the SDK's HTTP clients (``headers`` are sent with every
request); ``ws``/``websocket`` use the SDK's websocket client when the installed SDK has one,
and otherwise fail with ``DependencyError`` naming what is missing.

The SDK is async; each client owns an event loop in a daemon thread, where one task holds the
session open (its contexts must be entered and left in that same task) until ``close``.
Requests from the robot's thread are submitted to that loop and waited for with the server's
timeout, whatever the transport. Timeouts and lost connections are retryable ``MCPError``s
(spec fix 8), as is a remote server that cannot be reached; a stdio command that is missing or
exits is not.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from robotlab.errors import DependencyError, MCPError, ToolError
from robotlab.tools.tool import Tool

if TYPE_CHECKING:
    from mcp.types import Tool as MCPTool  # the server's description of a tool

__all__ = ["DEFAULT_TIMEOUT", "TRANSPORTS", "MCPClient", "server_timeout", "transport_opener"]

DEFAULT_TIMEOUT = 15.0
TRANSPORTS = ("stdio", "sse", "ws", "websocket", "streamable-http", "http")
SSE_READ_TIMEOUT = 24 * 3600.0
"""How long the SSE stream may stay silent: an idle server is not a lost one."""

Opener = Callable[[], AbstractAsyncContextManager[Any]]


def server_timeout(value: float | None) -> float:
    """Seconds to wait for a server: None gives 15; 1000 or more is milliseconds; at least 1."""
    if value is None:
        return DEFAULT_TIMEOUT
    seconds = float(value) / 1000 if value >= 1000 else float(value)
    return max(seconds, 1.0)


def _result_text(result: Any) -> str:
    parts = [getattr(item, "text", None) or str(item) for item in (getattr(result, "content", None) or [])]
    return "\n".join(parts)


def _root_cause(error: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK's task groups wrap what really failed)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _stdio(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    if not transport.get("command"):
        raise MCPError(f"Invalid server config: stdio transport of {name} needs a command")

    def open_stdio() -> AbstractAsyncContextManager[Any]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        return stdio_client(StdioServerParameters(command=str(transport["command"]),
                                                  args=list(transport.get("args") or []), env=transport.get("env")))

    return open_stdio


def _url(name: str, transport: dict[str, Any]) -> str:
    url = transport.get("url")
    if not url:
        raise MCPError(f"Invalid server config: {transport.get('type')} transport of {name} needs a url")
    return str(url)


def _streamable_http(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    url, headers = _url(name, transport), dict(transport.get("headers") or {})

    @asynccontextmanager
    async def open_http() -> Any:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers=headers) as client, \
                streamable_http_client(url, http_client=client) as streams:
            yield streams

    return open_http


def _sse(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    url, headers = _url(name, transport), dict(transport.get("headers") or {})

    def open_sse() -> AbstractAsyncContextManager[Any]:
        from mcp.client.sse import sse_client

        return sse_client(url, headers=headers, timeout=timeout, sse_read_timeout=SSE_READ_TIMEOUT)

    return open_sse


def _websocket(name: str, transport: dict[str, Any], timeout: float) -> Opener:
    url = _url(name, transport)
    try:
        from mcp.client.websocket import websocket_client  # type: ignore[import-not-found]
    except ImportError as exc:
        from importlib.metadata import version

        raise DependencyError(
            f"the {transport.get('type')} transport of MCP server {name} needs the mcp SDK's websocket client "
            f"(mcp.client.websocket, with the 'websockets' package: the 'ws' extra of mcp 1.x); "
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


class MCPClient:
    """One MCP server session, reached through ``opener`` (see ``transport_opener``).

    Args:
        name: the server's name (tools discovered on it carry it as ``mcp``).
        opener: opens the transport's streams.
        timeout: seconds, as ``server_timeout`` reads them.
        target: the command or URL, for error messages.
        remote: True for network transports: failing to reach the server is then retryable.
    """

    def __init__(self, name: str, opener: Opener, timeout: float | None = None, *, target: str = "",
                 remote: bool = False) -> None:
        self.name = name
        self.target = target
        self.remote = remote
        self.timeout = server_timeout(timeout)
        self._open = opener
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{name}", daemon=True)
        self._closing: asyncio.Event | None = None
        self._task: asyncio.Task[Any] | None = None
        self._session: Any = None
        self._tools: list[Tool] = []

    def connect(self) -> MCPClient:
        """Open the transport, initialise the session and list the server's tools.

        Raises:
            MCPError: the command is missing, the server exits or cannot be reached, or it does
                not answer in time.
        """
        self._thread.start()
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        try:
            listed = ready.result(self.timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise MCPError(f"MCP server did not respond within {self.timeout:g}s", retryable=True) from None
        except Exception as exc:  # whatever the SDK raised, the robot records it as a failed server
            self.close()
            raise self._start_error(_root_cause(exc)) from exc
        self._tools = [self._wrap(tool) for tool in listed]
        return self

    def _start_error(self, cause: BaseException) -> MCPError:
        if isinstance(cause, FileNotFoundError) and not self.remote:
            return MCPError(f"MCP server command not found: {self.target}")
        if self.remote:
            return MCPError(f"MCP server {self.name} unreachable at {self.target}: {cause}", retryable=True)
        return MCPError(f"MCP server {self.name} failed to start: {cause}")

    async def _serve(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        from mcp import ClientSession

        self._closing = asyncio.Event()
        self._task = asyncio.current_task()
        try:
            async with self._open() as streams, ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                self._session = session
                listed = await session.list_tools()
                ready.set_result(list(listed.tools))
                await self._closing.wait()
        except BaseException as exc:  # reported to connect(); the task itself just ends
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else MCPError(str(exc)))

    def _wrap(self, mcp_tool: MCPTool) -> Tool:
        schema = getattr(mcp_tool, "input_schema", None) or getattr(mcp_tool, "inputSchema", None) or {}
        return Tool.create(name=mcp_tool.name, description=mcp_tool.description or "", parameters=dict(schema),
                           handler=functools.partial(self.call_tool, mcp_tool.name), mcp=self.name)

    def list_tools(self) -> list[Tool]:
        """The server's tools, wrapped as robotlab tools."""
        return list(self._tools)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Call one tool and return its text.

        Raises:
            ToolError: the server reports the call failed.
            MCPError: not connected, the connection was lost, or no answer in time (retryable).
        """
        if self._session is None:
            raise MCPError(f"Not connected to MCP server: {self.name}")
        future = asyncio.run_coroutine_threadsafe(self._session.call_tool(name, arguments), self._loop)
        try:
            result = future.result(self.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise MCPError(f"MCP server did not respond within {self.timeout:g}s", retryable=True) from None
        except Exception as exc:  # a broken pipe, a closed stream or a refused connection: it is gone
            raise MCPError(f"MCP connection lost: {_root_cause(exc)}", retryable=True) from exc
        text = _result_text(result)
        if getattr(result, "is_error", False) or getattr(result, "isError", False):
            raise ToolError(text or f"MCP tool {name} failed")
        return text

    async def _shutdown(self, connected: bool) -> None:
        if self._closing is not None:
            self._closing.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 2 if connected else 0)
            except asyncio.TimeoutError:
                # Still starting (a server that never answered), or a remote one that does not
                # answer the goodbye: cancelling the task leaves its contexts, which stops a
                # child process and closes connections.
                task.cancel()
                await asyncio.wait([task], timeout=5)

    def close(self) -> None:
        """End the session, stop the server (stdio) or close the connection, and stop the loop."""
        connected, self._session = self._session is not None, None
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(connected), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
