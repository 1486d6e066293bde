"""MCP clients over the official ``mcp`` SDK, as synchronous ``ToolSource``s, for every transport
(``mcp_transports.py`` opens each one; ``mcp_replies.py`` reads what the server answers).

The SDK is async; each client owns an event loop in a daemon thread, where one task holds the
session open (its contexts must be entered and left in that same task) until ``close``.
Requests from the robot's thread are submitted to that loop and waited for with the server's
timeout, whatever the transport. Timeouts and lost connections are retryable ``MCPError``s
over every transport, stdio included (waiting can fix them), as is a remote server that cannot
be reached; a stdio command that is missing or exits is not.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from robotlab.errors import MCPError, ToolError
from robotlab.tools.mcp_replies import (
    attachable_part,
    content_info,
    is_refusal,
    page_request,
    part_text,
    prompt_info,
    resource_info,
    result_text,
    root_cause,
)
from robotlab.tools.mcp_transports import TRANSPORTS, Opener, transport_opener
from robotlab.tools.tool import Tool

if TYPE_CHECKING:
    from mcp.types import Tool as MCPTool  # the server's description of a tool

__all__ = ["DEFAULT_TIMEOUT", "TRANSPORTS", "MCPClient", "server_timeout", "transport_opener"]

DEFAULT_TIMEOUT = 15.0


def server_timeout(value: float | None) -> float:
    """Seconds to wait for a server: None gives 15; 1000 or more is milliseconds; at least 1."""
    if value is None:
        return DEFAULT_TIMEOUT
    seconds = float(value) / 1000 if value >= 1000 else float(value)
    return max(seconds, 1.0)


class MCPClient:
    """One MCP server session, reached through ``opener`` (see ``transport_opener``).

    Args:
        name: the server's name (tools discovered on it carry it as ``mcp``).
        opener: opens the transport's streams.
        timeout: seconds, as ``server_timeout`` reads them.
        target: the command or URL, for error messages.
        remote: True for network transports: failing to reach the server is then retryable.
    """

    def __init__(
        self,
        name: str,
        opener: Opener,
        timeout: float | None = None,
        *,
        target: str = "",
        remote: bool = False,
    ) -> None:
        self.name = name
        self.target = target
        self.remote = remote
        self.timeout = server_timeout(timeout)
        self.connect_timeout = self.timeout  # longer when connecting waits on a person (OAuth)
        self._open = opener
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"mcp-{name}", daemon=True
        )
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
            listed = ready.result(self.connect_timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise MCPError(
                f"MCP server did not respond within {self.connect_timeout:g}s", retryable=True
            ) from None
        except Exception as exc:  # whatever the SDK raised, the robot records it as a failed server
            self.close()
            raise self._start_error(root_cause(exc)) from exc
        self._tools = [self._wrap(tool) for tool in listed]
        return self

    def _start_error(self, cause: BaseException) -> MCPError:
        if isinstance(cause, MCPError):  # already says what is wrong (a refused authorization)
            return cause
        if isinstance(cause, FileNotFoundError) and not self.remote:
            return MCPError(f"MCP server command not found: {self.target}")
        if self.remote:
            return MCPError(
                f"MCP server {self.name} unreachable at {self.target}: {cause}", retryable=True
            )
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
        schema = (
            getattr(mcp_tool, "input_schema", None) or getattr(mcp_tool, "inputSchema", None) or {}
        )
        return Tool.create(
            name=mcp_tool.name,
            description=mcp_tool.description or "",
            parameters=dict(schema),
            handler=functools.partial(self.call_tool, mcp_tool.name),
            mcp=self.name,
        )

    def list_tools(self) -> list[Tool]:
        """The server's tools, wrapped as robotlab tools."""
        return list(self._tools)

    def _request(self, make: Callable[[Any], Coroutine[Any, Any, Any]]) -> Any:
        """Run ``make(session)`` on the session's loop and wait for it (the server's timeout).

        Raises:
            MCPError: not connected, the server refused, the connection was lost, or no answer
                in time (the last two retryable).
        """
        session = self._session
        if session is None:
            raise MCPError(f"Not connected to MCP server: {self.name}")
        future = asyncio.run_coroutine_threadsafe(make(session), self._loop)
        try:
            return future.result(self.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise MCPError(
                f"MCP server did not respond within {self.timeout:g}s", retryable=True
            ) from None
        except (
            Exception
        ) as exc:  # a broken pipe, a closed stream or a refused connection: it is gone
            cause = root_cause(exc)
            if is_refusal(cause):
                raise MCPError(f"MCP server {self.name}: {cause}") from exc
            raise MCPError(f"MCP connection lost: {cause}", retryable=True) from exc

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Call one tool and return its text.

        Raises:
            ToolError: the server reports the call failed.
            MCPError: not connected, the connection was lost, or no answer in time (retryable).
        """
        result = self._request(lambda session: session.call_tool(name, arguments))
        text = result_text(result)
        if getattr(result, "is_error", False) or getattr(result, "isError", False):
            raise ToolError(text or f"MCP tool {name} failed")
        return text

    def list_resources(self) -> list[dict[str, Any]]:
        """The server's resources, every page: ``{"uri", "name", "mime_type", "description"}``."""
        return [resource_info(r) for r in self._pages(lambda s: s.list_resources, "resources")]

    def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """The contents of resource ``uri``: ``{"uri", "mime_type", "text"}``, or ``"blob"``
        (base64) in place of ``"text"``.

        Raises:
            MCPError: the server refused (no such resource) or did not answer.
        """
        result = self._request(lambda session: session.read_resource(uri))
        return [content_info(item) for item in result.contents]

    def resource_part(self, uri: str) -> dict[str, Any]:
        """Resource ``uri`` as a message content part, to attach:
        ``run(msg, with_=client.resource_part(uri))``.

        Text becomes a text part headed by the URI; an image blob an ``image_url`` data URL.

        Raises:
            MCPError: the server refused or did not answer, or the resource is binary and not
                an image.
        """
        return attachable_part(uri, self.read_resource(uri))

    def list_prompts(self) -> list[dict[str, Any]]:
        """The server's prompts: ``{"name", "description", "arguments"}``, each argument
        ``{"name", "required", "description"}``."""
        return [prompt_info(p) for p in self._pages(lambda s: s.list_prompts, "prompts")]

    def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> list[dict[str, str]]:
        """Prompt ``name`` rendered by the server with ``arguments``: ``[{"role", "content"}]``.

        Raises:
            MCPError: no such prompt, a required argument missing, or no answer.
        """
        args = {k: str(v) for k, v in (arguments or {}).items()}
        result = self._request(lambda session: session.get_prompt(name, args))
        return [{"role": str(m.role), "content": part_text(m.content)} for m in result.messages]

    def _pages(
        self, method: Callable[[Any], Callable[..., Coroutine[Any, Any, Any]]], field: str
    ) -> list[Any]:
        """Every page of a paginated list request (``method(session)`` is the bound SDK method)."""
        items: list[Any] = []
        cursor: str | None = None
        while True:
            page = self._request(functools.partial(page_request, method, cursor))
            items += list(getattr(page, field))
            cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
            if not cursor:
                return items

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
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()  # its self-pipe sockets, also when connect never started the thread
