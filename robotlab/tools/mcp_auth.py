"""Credentials for MCP servers over HTTP: a bearer token, an ``auth_provider`` callable, or OAuth.

A remote transport config may carry, besides ``headers``:

- ``auth_provider``: a callable returning the ``Authorization`` header value (the spec's
  ``auth_provider.call``), asked before every request, so it can hand out fresh tokens;
- ``auth: {"type": "bearer", "token": "..."}``: a fixed bearer token;
- ``auth: {"type": "oauth", ...}``: the MCP authorization flow (OAuth 2.1 with PKCE, metadata
  discovery and dynamic client registration) through the SDK's ``OAuthClientProvider``.
  ``redirect_uri`` (default ``http://127.0.0.1:33418/callback``) is where the authorization
  server sends the browser back; a loopback server there catches the code (the callback).
  ``open_url`` (default ``webbrowser.open``) shows the person the authorization page;
  ``on_callback`` replaces the loopback server: it returns the URL the browser was sent to (or
  ``(code, state)``). ``scope``, ``client_name`` and ``token_path`` (a JSON file keeping the
  tokens and the client registration across runs; default: this process only) are optional.
- ``auth``: any ``httpx2.Auth`` object, used as it is (for example the SDK's
  ``ClientCredentialsOAuthProvider`` for machine-to-machine grants).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
import webbrowser
from collections.abc import Callable, Generator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from robotlab.errors import MCPError

__all__ = ["DEFAULT_REDIRECT_URI", "FileTokenStorage", "LoopbackCallback", "MemoryTokenStorage",
           "http_auth", "http_client", "person_wait"]

log = logging.getLogger("robotlab.tools.mcp")
DEFAULT_REDIRECT_URI = "http://127.0.0.1:33418/callback"
CALLBACK_TIMEOUT = 300.0
"""Seconds the loopback callback waits for the browser to come back."""


class HeaderAuth(httpx2.Auth):
    """Sets ``Authorization`` from a callable before every request."""

    def __init__(self, provide: Callable[[], str]) -> None:
        self._provide = provide

    def auth_flow(self,
                  request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        """Add the header the callable gives now."""
        request.headers["Authorization"] = str(self._provide())
        yield request


class MemoryTokenStorage:
    """The SDK's ``TokenStorage`` in this process: tokens last as long as the client."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        """The tokens held, if any."""
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens."""
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The client registration held, if any."""
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep the client registration."""
        self.client_info = client_info


class FileTokenStorage(MemoryTokenStorage):
    """The SDK's ``TokenStorage`` in a JSON file (mode 0600), so a later run skips the browser.

    The file also records when the access token expires. The SDK does not know the expiry of
    tokens it loads, so it would send an expired one, get a 401 and open the browser again; an
    expired access token is therefore loaded blank, which makes the SDK use the refresh token.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = Path(path).expanduser()
        try:
            saved = json.loads(self.path.read_text()) if self.path.exists() else {}
            self.tokens = (OAuthToken.model_validate(saved["tokens"]) if saved.get("tokens")
                           else None)
            info = saved.get("client_info")
            self.client_info = OAuthClientInformationFull.model_validate(info) if info else None
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise MCPError(f"MCP OAuth token_path {self.path} cannot be read ({exc}); "
                           "delete it to authorize again") from exc
        self.expires_at: float | None = saved.get("expires_at")
        if (self.tokens and self.tokens.refresh_token and self.expires_at
                and time.time() >= self.expires_at - 5):
            self.tokens = self.tokens.model_copy(update={"access_token": ""})

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"tokens": self.tokens.model_dump(mode="json") if self.tokens else None,
                "expires_at": self.expires_at,
                "client_info": (self.client_info.model_dump(mode="json") if self.client_info
                                else None)}
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(data, out)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens, on disk too, with the time the access token expires."""
        self.tokens = tokens
        self.expires_at = time.time() + tokens.expires_in if tokens.expires_in else None
        self._save()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep the client registration, on disk too."""
        self.client_info = client_info
        self._save()


def _code_of(answer: Any) -> AuthorizationCodeResult:
    if isinstance(answer, AuthorizationCodeResult):
        return answer
    if isinstance(answer, tuple):
        return AuthorizationCodeResult(code=answer[0], state=answer[1] if len(answer) > 1 else None)
    query = parse_qs(urlparse(str(answer)).query)
    if "code" not in query:
        error = query.get("error_description", query.get("error", ["no code in the callback"]))[0]
        raise MCPError(f"MCP authorization failed: {error}")
    return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                   iss=query.get("iss", [None])[0])


class LoopbackCallback:
    """The OAuth callback: a one-shot HTTP server on the redirect URI that catches the code.

    ``start`` binds it and serves on a thread (before the browser is sent off, so the answer
    cannot arrive first); ``wait`` returns the URL the browser came back to.
    """

    def __init__(self, redirect_uri: str, timeout: float = CALLBACK_TIMEOUT) -> None:
        target = urlparse(redirect_uri)
        if target.hostname not in ("127.0.0.1", "localhost", "::1") or not target.port:
            raise MCPError(f"MCP OAuth redirect_uri {redirect_uri} must be a loopback URL with a "
                           "port (like http://127.0.0.1:33418/callback), or pass on_callback")
        self.address, self.path, self.timeout = ((target.hostname, target.port), target.path or "/",
                                                 timeout)
        self._landed: list[str] = []
        self._thread: threading.Thread | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        landed, path = self._landed, self.path

        class Catch(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                found = urlparse(self.path).path == path
                if found:
                    landed.append(self.path)
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.end_headers()
                self.wfile.write(b"Authorized: you can close this window." if found
                                 else b"not here")

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Catch

    def start(self) -> None:
        """Listen on the redirect URI until the browser comes back or ``timeout`` passes."""
        self._landed.clear()
        server = HTTPServer(self.address, self._handler())
        server.timeout = 0.5

        def serve() -> None:
            end = time.monotonic() + self.timeout
            try:
                while not self._landed and time.monotonic() < end:
                    server.handle_request()
            finally:
                server.server_close()

        self._thread = threading.Thread(target=serve, name="mcp-oauth-callback", daemon=True)
        self._thread.start()

    def wait(self) -> str:
        """The callback URL the browser came back to (path and query).

        Raises:
            MCPError: nothing came back within ``timeout``.
        """
        if self._thread is None:
            raise MCPError("MCP OAuth callback waited before the authorization started")
        self._thread.join(self.timeout + 1)
        if not self._landed:
            raise MCPError(f"MCP OAuth: no answer on {self.path} within {self.timeout:g}s "
                           "(was the page approved?)")
        return self._landed[0]


def _oauth(name: str, url: str, options: dict[str, Any]) -> OAuthClientProvider:
    redirect_uri = str(options.get("redirect_uri") or DEFAULT_REDIRECT_URI)
    open_url: Callable[[str], Any] | None = options.get("open_url")
    loopback: LoopbackCallback | None = None
    wait: Callable[[], Any] | None = options.get("on_callback")
    if wait is None:
        loopback = LoopbackCallback(redirect_uri,
                                    float(options.get("callback_timeout") or CALLBACK_TIMEOUT))
        wait = loopback.wait

    async def redirect(authorization_url: str) -> None:
        if loopback is not None:
            loopback.start()
        if open_url is None:  # a browser may not open (no display): the person can copy the link
            log.warning("MCP server %s needs authorization: open %s", name, authorization_url)
        await asyncio.to_thread(open_url or webbrowser.open, authorization_url)

    async def callback() -> AuthorizationCodeResult:
        assert wait is not None
        return _code_of(await asyncio.to_thread(wait))

    metadata = OAuthClientMetadata.model_validate({
        "client_name": str(options.get("client_name") or f"robotlab ({name})"),
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "scope": options.get("scope")})
    storage = (FileTokenStorage(options["token_path"]) if options.get("token_path")
               else MemoryTokenStorage())
    return OAuthClientProvider(url, metadata, storage, redirect_handler=redirect,
                               callback_handler=callback)


def person_wait(transport: dict[str, Any]) -> float:
    """Seconds a connection may also wait for a person: the OAuth callback's time-out, else 0.

    Connecting to an OAuth server can mean waiting for someone to approve a page, which the
    server's own time-out (meant for requests) does not cover.
    """
    auth = transport.get("auth")
    if isinstance(auth, dict) and auth.get("type") == "oauth":
        return float(auth.get("callback_timeout") or CALLBACK_TIMEOUT)
    return 0.0


def http_auth(name: str, transport: dict[str, Any]) -> httpx2.Auth | None:
    """The ``httpx2.Auth`` for a remote transport config, or None when it names no credentials.

    Raises:
        MCPError: ``auth`` is of an unknown kind or misses what its kind needs.
    """
    auth, provider = transport.get("auth"), transport.get("auth_provider")
    if provider is not None:
        if not callable(provider):
            raise MCPError(f"auth_provider of MCP server {name} must be a callable returning the "
                           "Authorization header")
        return HeaderAuth(provider)
    if auth is None or isinstance(auth, httpx2.Auth):
        return auth
    kind = auth.get("type") if isinstance(auth, dict) else None
    if kind == "bearer" and auth.get("token"):
        token = str(auth["token"])
        return HeaderAuth(lambda: f"Bearer {token}")
    if kind == "oauth":
        return _oauth(name, str(transport.get("url")), auth)
    raise MCPError(f"auth of MCP server {name} must be {{type: bearer, token: ...}} or "
                   f"{{type: oauth, ...}} (or an httpx2.Auth), got {auth!r}")


def _refusal(name: str, credentials: bool) -> Callable[[httpx2.Response], Any]:
    async def check(response: httpx2.Response) -> None:
        if response.status_code not in (401, 403):
            return
        said = f"{response.status_code} {response.reason_phrase}"
        if credentials:
            raise MCPError(f"MCP server {name} refused the credentials ({said}): check the token "
                           "its auth or auth_provider gives")
        raise MCPError(f"MCP server {name} requires authorization ({said}): give its transport "
                       "auth: {type: oauth} (or {type: bearer, token: ...}, or an auth_provider)")

    return check


def http_client(name: str, transport: dict[str, Any]) -> httpx2.AsyncClient:
    """The SDK's HTTP client for a remote transport.

    It carries the transport's ``headers`` and credentials (``http_auth``).

    Without OAuth (which answers a 401 itself), a 401 or 403 fails the request with an
    ``MCPError`` saying what to give the server.
    """
    from mcp.shared._httpx_utils import create_mcp_http_client

    auth = http_auth(name, transport)
    client = create_mcp_http_client(headers=dict(transport.get("headers") or {}), auth=auth)
    if not isinstance(auth, OAuthClientProvider):
        credentials = auth is not None or "Authorization" in client.headers
        client.event_hooks["response"].append(_refusal(name, credentials))
    return client
