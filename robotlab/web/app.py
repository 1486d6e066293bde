"""The web console's ASGI app (starlette).

It serves the page, its event stream and the replay button's request.

One watcher looks at the crew every ``interval`` seconds (``Console.view`` on a worker thread)
and keeps the latest view; each browser's stream (server-sent events) gets the whole view when
it connects, then only the sections that changed. Browsers never poll: they listen.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from robotlab.errors import BusError

from .access import RequireKey
from .console import Console, changes

log = logging.getLogger("robotlab.web")

RUNS_SHOWN = 10
"""Runs of a robot the page shows when it does not say how many."""


class Watcher:
    """The latest view of the crew, and a signal each time it changes."""

    def __init__(self, console: Console, interval: float) -> None:
        self.console = console
        self.interval = interval
        self.latest: dict[str, Any] | None = None
        self.error: str | None = None
        self.closed = False
        self._changed = anyio.Event()

    async def look(self) -> None:
        """Take one view now.

        After a replay, so the page shows its outcome without waiting a turn.
        """
        view: dict[str, Any] | None = self.latest
        error: str | None = None
        try:
            view = await anyio.to_thread.run_sync(self.console.view)
        except BusError as exc:  # the broker away for a moment: said on the page, looked at again
            error = str(exc)
        if view != self.latest or error != self.error:
            self.latest, self.error = view, error
            self._changed.set()
            self._changed = anyio.Event()

    async def run(self) -> None:
        """Look every ``interval`` seconds until cancelled."""
        while True:
            await self.look()
            await anyio.sleep(self.interval)

    async def next_change(self) -> None:
        """Return at the next change of the view, or when the watcher closes."""
        await self._changed.wait()

    def close(self) -> None:
        """End every stream (each then finishes its response: the server stops without waiting)."""
        self.closed = True
        self._changed.set()


async def stream(watcher: Watcher) -> AsyncIterator[ServerSentEvent]:
    """One browser's events.

    Each section of the view as it changes, and the broker's reachability.
    """
    sent: dict[str, Any] | None = None
    error: str | None = ""  # never an error's text: the first turn always says how the broker is
    while not watcher.closed:
        if watcher.latest is not None:
            for section, data in changes(sent, watcher.latest):
                yield ServerSentEvent(json.dumps(data, default=str), event=section)
            sent = watcher.latest
        if watcher.error != error:
            error = watcher.error
            yield ServerSentEvent(json.dumps({"error": error}), event="broker")
        await watcher.next_change()


def build_app(watcher: Watcher, key: str | None = None) -> Starlette:
    """The console's app: ``/`` the page, ``/events`` its stream, ``/api/view`` the view as JSON,
    ``POST /api/dlq/{dlq_id}/replay`` (``?force=1`` for a letter that may have run),
    ``/api/runs/{name}`` (``?last=N``) a robot's recent runs, and ``POST /api/desk/answer``
    (``{"number": N, "text": ...}``) her answer to a question, with ``--human``.

    With ``key``, every path answers only a request that carries it (``access.py``).
    """
    console = watcher.console
    page = resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def events(request: Request) -> Response:
        return EventSourceResponse(stream(watcher), ping=15)

    async def view(request: Request) -> Response:
        shown = await anyio.to_thread.run_sync(console.view)
        return Response(json.dumps(shown, default=str), media_type="application/json")

    async def replay(request: Request) -> Response:
        dlq_id = request.path_params["dlq_id"]
        force = request.query_params.get("force") in {"1", "true", "yes"}
        outcome = await anyio.to_thread.run_sync(console.replay, dlq_id, force)
        log.info("replay %s%s: %s", dlq_id, " (forced)" if force else "", outcome)
        await watcher.look()
        return JSONResponse(outcome, status_code=200 if outcome["ok"] else 409)

    async def runs(request: Request) -> Response:
        last = request.query_params.get("last", "")
        shown = int(last) if last.isdigit() and int(last) > 0 else RUNS_SHOWN
        outcome = await anyio.to_thread.run_sync(console.runs, request.path_params["name"], shown)
        return Response(json.dumps(outcome, default=str), media_type="application/json",
                        status_code=200 if outcome["ok"] else 404)

    async def answer(request: Request) -> Response:
        outcome = await answer_outcome(console, request)
        await watcher.look()
        return JSONResponse(outcome, status_code=200 if outcome["ok"] else 409)

    routes = [Route("/", index), Route("/events", events), Route("/api/view", view),
              Route("/api/dlq/{dlq_id}/replay", replay, methods=["POST"]),
              Route("/api/runs/{name}", runs),
              Route("/api/desk/answer", answer, methods=["POST"])]
    return Starlette(routes=routes,
                     middleware=[] if key is None else [Middleware(RequireKey, key=key)])


async def answer_outcome(console: Console, request: Request) -> dict[str, Any]:
    """Her answer from the page: ``{"number": N, "text": ...}`` (no number: the newest open
    question), sent as ``robotlab human`` sends a typed line."""
    if console.desk is None:
        return {"ok": False, "said": "nobody's desk here: start the console with --human NAME"}
    try:
        asked = await request.json()
    except ValueError:
        asked = None
    text = asked.get("text") if isinstance(asked, dict) else None
    number = asked.get("number") if isinstance(asked, dict) else None
    if not isinstance(text, str) or not text.strip() or not (
            number is None or (isinstance(number, int) and not isinstance(number, bool))):
        return {"ok": False, "said": 'give {"number": N, "text": "your answer"}'}
    outcome = await anyio.to_thread.run_sync(console.desk.answer, text.strip(), number)
    log.info("%s: %s", console.desk.name, outcome["said"])
    return outcome
