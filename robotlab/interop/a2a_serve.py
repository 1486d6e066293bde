"""``robotlab a2a-serve``: each live robot of the crew as an A2A agent, served with the official
``a2a-sdk``'s request handler and routes over JSON-RPC.

One agent a robot name, at ``/robots/<name>/``: its JSON-RPC endpoint there and its card at
``/robots/<name>/.well-known/agent-card.json``; ``GET /robots`` lists the live robots and their
cards. A robot's agent is made the first time it is asked for, and only while it is on the bus
(the broker's ``ps``, asked on each card and on a first send); once made it keeps its tasks in
this process's memory, so ``tasks/get`` and ``tasks/cancel`` still answer after the robot left.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

import anyio
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from robotlab.errors import RobotlabError

from .a2a_agent import RobotExecutor, agent_card
from .a2a_asks import Asks
from .crew import Crew, one_line
from .uvicorn_run import serve_app

log = logging.getLogger("robotlab.a2a")

ROBOTS = "/robots"
"""Under this path, one agent a robot name."""


def base_url(sock: socket.socket) -> str:
    """The URL clients reach ``sock`` at.

    An unspecified address (``0.0.0.0``) is given by this host's name.
    """
    host, port = sock.getsockname()[:2]
    if host in ("0.0.0.0", "::"):
        host = socket.getfqdn()
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _error(status: int, text: str) -> JSONResponse:
    return JSONResponse({"error": text}, status_code=status)


def is_loopback_name(host: str | None) -> bool:
    """Whether ``host`` (a URL's host name) names this machine's loopback."""
    if host is None or host == "localhost":
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LoopbackOnly:
    """Refuse a request whose ``Host`` or ``Origin`` is not loopback: a server bound to loopback is
    then out of reach of a web page that rebinds its own name to 127.0.0.1 (DNS rebinding)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {key.decode("latin-1"): value.decode("latin-1")
                       for key, value in scope["headers"]}
            named = [("Host", "//" + headers.get("host", "")), ("Origin", headers.get("origin"))]
            for header, value in named:
                if value is not None and not is_loopback_name(urlsplit(value).hostname):
                    await _error(403, f"{header} {value.removeprefix('//')!r} is not loopback: "
                                 "this server answers only this machine (serve with --insecure to "
                                 "answer others)")(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class Agents:
    """The ASGI app under ``/robots/<name>``.

    Each request goes to the robot's agent, made on first use.
    """

    def __init__(self, crew: Crew, base: str) -> None:
        self.crew = crew
        self.base = base
        self.asks = Asks(crew.client, crew.timeout)
        self._apps: dict[str, ASGIApp] = {}

    async def live(self) -> dict[str, int]:
        """Each live robot's name and how many instances of it are on the bus now."""
        tools, _ = await anyio.to_thread.run_sync(self.crew.tools, abandon_on_cancel=True)
        return {tool.robot: tool.instances for tool in tools}

    def url(self, robot: str) -> str:
        """The agent's JSON-RPC endpoint, which its card is under."""
        return f"{self.base}{ROBOTS}/{robot}/"

    def _agent(self, robot: str, instances: int) -> ASGIApp:
        card = agent_card(robot, instances, self.url(robot))
        handler = DefaultRequestHandler(RobotExecutor(self.asks, robot), InMemoryTaskStore(), card)
        app = Starlette(routes=[*create_agent_card_routes(card),
                                *create_jsonrpc_routes(handler, rpc_url="/")])
        log.info("agent %s at %s", robot, self.url(robot))
        return app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        robot = scope["path_params"]["robot"]
        app = self._apps.get(robot)
        if app is None or scope.get("method") == "GET":  # a card says who is live now
            try:
                live = await self.live()
            except RobotlabError as exc:
                await _error(503, f"cannot list the crew: {one_line(exc)}")(scope, receive, send)
                return
            if robot not in live:
                await _error(404, f"no live robot named {robot!r} on the bus: GET {ROBOTS} "
                             "lists the agents")(scope, receive, send)
                return
            app = (self._apps.get(robot)
                   or self._apps.setdefault(robot, self._agent(robot, live[robot])))
        await app(scope, receive, send)


def build_app(crew: Crew, base: str) -> Starlette:
    """The server's app: ``GET /robots`` and one agent a live robot under ``/robots/<name>/``.

    Bound to loopback, it answers only requests that name a loopback host (``LoopbackOnly``).
    """
    agents = Agents(crew, base)

    async def listing(request: Request) -> JSONResponse:
        try:
            live = await agents.live()
        except RobotlabError as exc:
            return _error(503, f"cannot list the crew: {one_line(exc)}")
        return JSONResponse({"robots": [
            {"name": robot, "url": agents.url(robot),
             "card": agents.url(robot) + ".well-known/agent-card.json"}
            for robot in sorted(live)]})

    loopback = is_loopback_name(urlsplit(base).hostname)
    return Starlette(routes=[Route(ROBOTS, listing, methods=["GET"]),
                             Mount(ROBOTS + "/{robot}", app=agents)],
                     middleware=[Middleware(LoopbackOnly)] if loopback else [])


def serve(crew: Crew, sock: socket.socket, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve the crew's agents on the listening ``sock`` until SIGTERM or Ctrl-C."""
    base = base_url(sock)

    def ready() -> None:
        if on_ready is not None:
            on_ready(base + ROBOTS)

    anyio.run(functools.partial(serve_app, ready=ready), build_app(crew, base), sock)


