"""An MCP stdio client over the official ``mcp`` SDK, as a synchronous ``ToolSource``.

The SDK is async; each client owns an event loop in a daemon thread, where one task holds the
session open (its contexts must be entered and left in that same task) until ``close``.
Requests from the robot's thread are submitted to that loop and waited for with the server's
timeout. Lost connections and timeouts are retryable ``MCPError``s.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

from robotlab.errors import MCPError, ToolError
from robotlab.tool import Tool

__all__ = ["DEFAULT_TIMEOUT", "TRANSPORTS", "StdioToolSource", "server_timeout"]

DEFAULT_TIMEOUT = 15.0
TRANSPORTS = ("stdio", "sse", "ws", "websocket", "streamable-http", "http")


def server_timeout(value: float | None) -> float:
    """Seconds to wait for a server: None gives 15; 1000 or more is milliseconds; at least 1."""
    if value is None:
        return DEFAULT_TIMEOUT
    seconds = float(value) / 1000 if value >= 1000 else float(value)
    return max(seconds, 1.0)


def _result_text(result: Any) -> str:
    parts = [getattr(item, "text", None) or str(item) for item in (getattr(result, "content", None) or [])]
    return "\n".join(parts)


class StdioToolSource:
    """One MCP server started as a child process and spoken to over stdio."""

    def __init__(self, name: str, command: str, args: list[str] | None = None,
                 env: dict[str, str] | None = None, timeout: float | None = None) -> None:
        self.name = name
        self.command = command
        self.args = list(args or [])
        self.env = env
        self.timeout = server_timeout(timeout)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{name}", daemon=True)
        self._closing: asyncio.Event | None = None
        self._task: asyncio.Task[Any] | None = None
        self._session: Any = None
        self._tools: list[Tool] = []

    def connect(self) -> StdioToolSource:
        """Start the server, initialise the session and list its tools.

        Raises:
            MCPError: the command is missing, the server exits, or it does not answer in time.
        """
        self._thread.start()
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        try:
            listed = ready.result(self.timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise MCPError(f"MCP server did not respond within {self.timeout:g}s", retryable=True) from None
        except FileNotFoundError as exc:
            self.close()
            raise MCPError(f"MCP server command not found: {self.command}") from exc
        except Exception as exc:  # whatever the SDK raised, the robot records it as a failed server
            self.close()
            raise MCPError(f"MCP server {self.name} failed to start: {exc}") from exc
        self._tools = [self._wrap(tool) for tool in listed]
        return self

    async def _serve(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        self._closing = asyncio.Event()
        self._task = asyncio.current_task()
        params = StdioServerParameters(command=self.command, args=self.args, env=self.env)
        try:
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                self._session = session
                listed = await session.list_tools()
                ready.set_result(list(listed.tools))
                await self._closing.wait()
        except BaseException as exc:  # reported to connect(); the task itself just ends
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else MCPError(str(exc)))

    def _wrap(self, mcp_tool: Any) -> Tool:
        schema = getattr(mcp_tool, "input_schema", None) or getattr(mcp_tool, "inputSchema", None) or {}
        return Tool.create(name=mcp_tool.name, description=mcp_tool.description or "", parameters=dict(schema),
                           handler=lambda args, name=mcp_tool.name: self.call_tool(name, args), mcp=self.name)

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
        except Exception as exc:  # a broken pipe or closed stream: the connection is gone
            raise MCPError(f"MCP connection lost: {exc}", retryable=True) from exc
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
                # Still starting (a server that never answered): cancelling the task leaves
                # its contexts, which stops the child process.
                task.cancel()
                await asyncio.wait([task], timeout=5)

    def close(self) -> None:
        """End the session, stop the server and the loop."""
        connected, self._session = self._session is not None, None
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(connected), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
