"""``robotlab mcp-serve``: the crew over MCP.

It is served with the official ``mcp`` SDK's low-level ``Server``.

Each live robot is a tool ``ask_<name>(message)`` (``crew.py``). ``tools/list`` asks the broker
each time; a watcher asks every ``interval`` seconds and, when the tools changed, tells the
clients: on their ``subscriptions/listen`` streams (the 2026-07-28 protocol) through the SDK's
subscription bus, and on the connection of each handshake-era client that listed the tools
since the last change (``notifications/tools/list_changed``). The low-level ``Server``, not
``MCPServer``: ``MCPServer``'s tools are Python functions registered ahead of time, where these
come and go with the bus.

Bus calls block, so they run on worker threads; a robot's failure or time-out is a tool
result with ``isError`` and one line, never a protocol error.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import anyio
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.caching import CacheHint
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError as ProtocolFault
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from robotlab.errors import RobotlabError

from .crew import Crew, RobotTool, one_line
from .uvicorn_run import on_signal, serve_app

log = logging.getLogger("robotlab.mcp")

HTTP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is served."""
MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string",
                               "description": "What to ask the robot, as you would write it."}},
    "required": ["message"],
}
INSTRUCTIONS = ("Each tool asks one robot of a robotlab crew, live on its bus: tools appear as "
                "robots join and disappear as they leave. A call waits for the robot's reply.")


class Listeners:
    """Who is told that the tools changed."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._sessions: dict[str | None, ServerSession] = {}

    def listed(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Remember a handshake-era client that listed the tools (a 2026-07-28 one listens
        instead)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # HTTP: one session id a client; stdio: one client
            headers = getattr(ctx.request, "headers", None)
            session_id = headers.get("mcp-session-id") if headers is not None else None
            self._sessions[session_id] = ctx.session

    async def tools_changed(self) -> None:
        """Publish the change to listen streams and tell each client that listed since the last
        change.

        Those clients are then forgotten: one that wants to hear of the next change lists the
        tools again, as a client told of this one does. A client gone since cannot be told.
        """
        await self.bus.publish(ToolsListChanged())
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            with contextlib.suppress(Exception):  # its connection closed: nobody left to tell
                await session.send_tool_list_changed()


class CrewServer(Server[Any]):
    """The SDK's low-level ``Server``, announcing that its tool list changes (``listChanged``)."""

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The handshake's options: ``tools.listChanged`` true unless told otherwise."""
        notifications = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(notifications, experimental_capabilities,
                                                     extensions)


def _tool(tool: RobotTool) -> types.Tool:
    return types.Tool(name=tool.name, description=tool.description, input_schema=MESSAGE_SCHEMA)


def _failed(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def build_server(crew: Crew, listeners: Listeners) -> CrewServer:
    """The MCP server of ``crew``: ``tools/list`` from the broker, ``tools/call`` over the bus."""

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        listeners.listed(ctx)
        try:
            tools, _ = await anyio.to_thread.run_sync(crew.tools, abandon_on_cancel=True)
        except RobotlabError as exc:
            raise ProtocolFault(types.INTERNAL_ERROR,
                                f"cannot list the crew: {one_line(exc)}") from exc
        return types.ListToolsResult(tools=[_tool(tool) for tool in tools])

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        message = (params.arguments or {}).get("message")
        if not isinstance(message, str):
            return _failed(f'{params.name}: give the robot a message as a string: '
                           '{"message": "..."}')
        try:
            text = await anyio.to_thread.run_sync(crew.ask, params.name, message,
                                                  abandon_on_cancel=True)
        except RobotlabError as exc:
            return _failed(f"{params.name}: {one_line(exc)}")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return CrewServer(
        "robotlab", version=version("robotlab"), instructions=INSTRUCTIONS,
        # the list follows the bus: never fresh for long
        cache_hints={"tools/list": CacheHint(ttl_ms=0)},
        on_list_tools=list_tools, on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(listeners.bus))


async def watch(crew: Crew, listeners: Listeners, interval: float) -> None:
    """Ask the broker for the crew every ``interval`` seconds.

    The listeners are told when it changed.
    """
    last: list[RobotTool] | None = None
    failing, warned = False, set[str]()
    while True:
        try:
            tools, left_out = await anyio.to_thread.run_sync(crew.tools, abandon_on_cancel=True)
        except RobotlabError as exc:
            if not failing:
                log.warning("cannot list the crew (asking again every %gs): %s", interval,
                            one_line(exc))
            failing = True
        else:
            if failing:
                log.info("the broker answers again")
            failing = False
            for name in set(left_out) - warned:
                log.warning("robot %r has no tool: a tool name takes letters, digits, '_', '.' "
                            "and '-', at most 124 of them", name)
            warned.update(left_out)
            if tools != last:
                log.info("tools: %s",
                         ", ".join(tool.name for tool in tools) or "none (no robot on the bus)")
                if last is not None:
                    await listeners.tools_changed()
            last = tools
        await anyio.sleep(interval)


async def _serve_stdio(crew: Crew, interval: float) -> None:
    from mcp.server.stdio import stdio_server

    listeners = Listeners()
    server = build_server(crew, listeners)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch, crew, listeners, interval)
        tasks.start_soon(on_signal, tasks.cancel_scope.cancel)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        tasks.cancel_scope.cancel()  # the client closed stdin: done


async def _serve_http(crew: Crew, interval: float, sock: socket.socket, host: str,
                      ready: Callable[[], None] | None) -> None:
    listeners = Listeners()
    app = build_server(crew, listeners).streamable_http_app(streamable_http_path=HTTP_PATH,
                                                            host=host)
    await serve_app(app, sock, lambda: watch(crew, listeners, interval), ready=ready)


def serve_stdio(crew: Crew, interval: float) -> None:
    """Serve ``crew`` on stdin and stdout until the client closes stdin, SIGTERM or Ctrl-C."""
    anyio.run(_serve_stdio, crew, interval)


def serve_http(crew: Crew, interval: float, sock: socket.socket, host: str,
               on_ready: Callable[[str], None] | None = None) -> None:
    """Serve ``crew`` over streamable HTTP on the listening ``sock`` until SIGTERM or Ctrl-C."""
    address = sock.getsockname()
    shown = f"[{address[0]}]" if ":" in address[0] else address[0]
    url = f"http://{shown}:{address[1]}{HTTP_PATH}"
    anyio.run(_serve_http, crew, interval, sock, host,
              None if on_ready is None else lambda: on_ready(url))
