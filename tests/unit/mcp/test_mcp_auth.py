"""MCP over HTTP with authorization, against a real server process: the SDK's streamable-HTTP
server behind its own OAuth authorization server (``oauth_server.py``). Unauthenticated
clients are refused with a clear error; a bearer token, an ``auth_provider`` callable and the
OAuth flow (discovery, dynamic registration, PKCE, the loopback callback, the token exchange)
each get in, list the tools and call one."""

from __future__ import annotations

import json
import stat
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import robotlab
from robotlab.errors import MCPError
from robotlab.testing import ScriptedLLM
from robotlab.tools.mcp import connect_source
from tests.unit.mcp.conftest import GUARDED_TOKEN
from tests.waiting import wait_until


def server(url: str, **transport: Any) -> dict[str, Any]:
    return {"name": "guarded", "transport": {"type": "streamable-http", "url": url, **transport},
            "timeout": 30}


def whoami(config: dict[str, Any]) -> tuple[list[str], str]:
    client = connect_source(config)
    try:
        return [t.name for t in client.list_tools()], client.call_tool("whoami", {})
    finally:
        client.close()


class Browser:
    """Stands in for the person's browser: opens the authorization page, follows its redirect
    back to the callback, as a browser does once the user approves."""

    def __init__(self) -> None:
        self.opened: list[str] = []

    def __call__(self, url: str) -> None:
        self.opened.append(url)
        with urllib.request.urlopen(url, timeout=10) as page:
            assert page.read() == b"Authorized: you can close this window."


def test_an_unauthenticated_client_is_refused_clearly(guarded_http: str) -> None:
    with pytest.raises(MCPError, match=r"requires authorization \(401 Unauthorized\): give its "
                                       r"transport auth"):
        connect_source(server(guarded_http))
    with pytest.raises(MCPError, match=r"refused the credentials \(401 Unauthorized\)"):
        connect_source(server(guarded_http, auth={"type": "bearer", "token": "wrong"}))
    # Through a robot, as any failed server: recorded, the run goes on without its tools
    llm = ScriptedLLM([{"content": "no tools"}])
    bot = robotlab.build(mcp=[server(guarded_http)], llm=llm)
    bot.run("who am I?", mcp="inherit", tools="inherit")
    assert bot.failed_mcp_server_names() == ["guarded"]
    assert llm.requests[0].tool_names == []


def test_a_bearer_token_and_an_auth_provider_get_in(guarded_http: str) -> None:
    assert whoami(server(guarded_http, auth={"type": "bearer", "token": GUARDED_TOKEN})) == (
        ["whoami"], "an authenticated caller")
    asked: list[int] = []

    def provide() -> str:
        asked.append(1)
        return f"Bearer {GUARDED_TOKEN}"

    assert whoami(server(guarded_http, auth_provider=provide))[1] == "an authenticated caller"
    assert len(asked) >= 3  # initialize, list, call: asked before each request
    with pytest.raises(MCPError, match="auth of MCP server guarded must be"):
        connect_source(server(guarded_http, auth={"type": "password"}))


def test_the_oauth_flow_authorizes_through_the_callback_and_keeps_its_tokens(
        guarded_http: str, callback_uri: str, tmp_path: Path) -> None:
    browser, tokens = Browser(), tmp_path / "tokens.json"
    auth = {"type": "oauth", "redirect_uri": callback_uri, "open_url": browser,
            "token_path": str(tokens), "client_name": "robotlab tests"}
    assert whoami(server(guarded_http, auth=auth)) == (["whoami"], "an authenticated caller")
    [opened] = browser.opened
    assert opened.startswith(guarded_http.removesuffix("/mcp") + "/authorize?")
    assert "code_challenge_method=S256" in opened
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    # A second connection (a later run, another process) reuses the stored token: no browser
    assert whoami(server(guarded_http, auth=auth))[1] == "an authenticated caller"
    assert len(browser.opened) == 1


def test_a_robot_calls_a_tool_of_an_oauth_server_with_its_own_callback(
        guarded_http: str, callback_uri: str) -> None:
    # on_callback replaces the loopback server: here the "browser" stops at the redirect and
    # hands its URL over, as a person pasting it would.
    landed: list[str] = []

    def open_without_following(url: str) -> None:
        class Stop(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                                 newurl: str) -> None:
                landed.append(newurl)

        with pytest.raises(urllib.error.HTTPError):
            urllib.request.build_opener(Stop).open(url, timeout=10)

    auth = {"type": "oauth", "redirect_uri": callback_uri, "open_url": open_without_following,
            "on_callback": lambda: landed[0]}
    llm = ScriptedLLM([{"tool_calls": [{"name": "whoami", "arguments": {}}]},
                       {"content": "you are in"}])
    bot = robotlab.build(mcp=[server(guarded_http, auth=auth)], llm=llm)
    try:
        assert bot.run("who am I?", mcp="inherit", tools="inherit").reply == "you are in"
    finally:
        bot.disconnect()
    assert bot.failed_mcp_server_names() == []
    assert llm.requests[0].tool_names == ["whoami"]
    assert llm.requests[1].tool_results() == ["an authenticated caller"]
    assert landed[0].startswith(callback_uri + "?code=")


def test_a_token_file_that_cannot_be_read_says_what_to_do(tmp_path: Path) -> None:
    broken = tmp_path / "tokens.json"
    broken.write_text("{not json")
    with pytest.raises(MCPError, match=r"token_path .*tokens.json cannot be read .*delete it to "
                                       r"authorize again"):
        connect_source(server("http://127.0.0.1:1/mcp",
                              auth={"type": "oauth", "token_path": str(broken)}))


def test_a_later_run_refreshes_an_expired_token_instead_of_asking_again(
        short_token_http: str, callback_uri: str, tmp_path: Path) -> None:
    browser, tokens = Browser(), tmp_path / "tokens.json"
    auth = {"type": "oauth", "redirect_uri": callback_uri, "open_url": browser,
            "token_path": str(tokens)}
    assert whoami(server(short_token_http, auth=auth))[1] == "an authenticated caller"
    first = json.loads(tokens.read_text())
    wait_until(lambda: time.time() > first["expires_at"], timeout=10,
               message="the access token expired")
    assert whoami(server(short_token_http, auth=auth))[1] == "an authenticated caller"
    again = json.loads(tokens.read_text())
    assert len(browser.opened) == 1  # refreshed, not authorized again
    assert again["tokens"]["access_token"] != first["tokens"]["access_token"]
    # rotated by the server
    assert again["tokens"]["refresh_token"] != first["tokens"]["refresh_token"]
