"""Who may use the web console: whoever shows its access key (``robotlab web --access-key FILE``).

The broker listens beyond loopback only with keys; so does the console, whose page can replay
dead letters and answer as a person. Every request carries the key, as ``Authorization: Bearer
KEY`` (a script) or as the cookie set when the page is opened once at ``/?key=KEY`` (a browser:
its event stream and buttons then send the cookie by themselves).
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Final

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from robotlab.errors import ConfigError

COOKIE: Final = "robotlab_web_key"
"""The cookie a browser keeps the key in (HttpOnly, SameSite=Strict: no other site sends it)."""
SHORTEST: Final = 16
"""Fewest characters a key may have: a guessable key is no key."""
REFUSED: Final = ("this console asks for its access key: open /?key=KEY once in a browser, or "
                  "send the header Authorization: Bearer KEY\n")


def read_key(path: str) -> str:
    """The access key in the file ``path`` (its first line).

    Raises:
        ConfigError: the file cannot be read, or its key is shorter than :data:`SHORTEST`.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the access key {path}: {exc}") from exc
    key = lines[0].strip() if lines else ""
    if len(key) < SHORTEST:
        raise ConfigError(f"the access key in {path} is shorter than {SHORTEST} characters: "
                          "write a long random one (openssl rand -hex 24 > FILE)")
    return key


def _same(given: str | None, key: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), key.encode())


class RequireKey:
    """ASGI middleware: the app behind it answers only requests that carry ``key``."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app, self.key = app, key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a request that carries the key; let a browser in by ``/?key=KEY``; refuse the
        rest with 401 and one line."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        bearer = request.headers.get("authorization", "")
        given = bearer[len("Bearer "):] if bearer.startswith("Bearer ") else None
        if _same(given, self.key) or _same(request.cookies.get(COOKIE), self.key):
            await self.app(scope, receive, send)
            return
        response: Response = PlainTextResponse(REFUSED, status_code=401)
        if request.url.path == "/" and _same(request.query_params.get("key"), self.key):
            # The key leaves the address bar (and the browser's history) at once; "./" keeps a
            # proxy's path prefix.
            response = RedirectResponse("./", status_code=303)
            response.set_cookie(COOKIE, self.key, httponly=True, samesite="strict")
        await response(scope, receive, send)
