"""Remote MCP servers (spec 25): streamable HTTP and SSE through the SDK, timeouts and lost
connections retryable whatever the transport (fix 8), websocket refused without its client.

Each server is the SDK's own server in a subprocess, on 127.0.0.1 and a port it picks itself.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import robotlab
from robotlab import DependencyError, MCPError
from robotlab.testing import ScriptedLLM
from robotlab.tools.mcp import connect_source
from tests.waiting import wait_until

SERVER = '''
import socket, sys
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("remote")


@app.tool()
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@app.tool()
def header(name: str, ctx: Context) -> str:
    """A header of the HTTP request that called this tool."""
    return str(ctx.request_context.request.headers.get(name))


@app.tool()
async def stall(seconds: float) -> str:
    """Answer after a while."""
    import anyio
    await anyio.sleep(seconds)
    return "late"


asgi = app.sse_app() if sys.argv[1] == "sse" else app.streamable_http_app()
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen(64)
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(asgi, log_level="warning")).run(sockets=[sock])
'''
PATHS = {"sse": "/sse", "streamable-http": "/mcp", "http": "/mcp"}


class Server:
    """A running MCP server subprocess and where to reach it."""

    def __init__(self, folder: Path, transport: str) -> None:
        script, self.log = folder / "server.py", folder / f"server-{transport}.log"
        script.write_text(SERVER)
        kind = "sse" if transport == "sse" else "streamable-http"
        with open(self.log, "wb") as out:
            self.popen = subprocess.Popen([sys.executable, str(script), kind], stdout=out,
                                          stderr=subprocess.STDOUT)
        port = wait_until(lambda: self.log.read_text().split("\n", 1)[0].strip().isdigit()
                          and self.log.read_text().split("\n", 1)[0].strip(), timeout=30,
                          message="server port")
        self.url = f"http://127.0.0.1:{port}{PATHS[transport]}"

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(10)


@pytest.fixture(scope="module", params=["streamable-http", "sse"])
def server(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Server]]:
    """One server per transport for the module's tests."""
    running = Server(tmp_path_factory.mktemp(request.param), request.param)
    yield request.param, running
    running.stop()


def remote(kind: str, url: str, timeout: float | None = None) -> dict:
    return {"name": "remote", "transport": {"type": kind, "url": url, "headers": {"X-Test": "1"}},
            "timeout": timeout}


def calling(*calls: tuple[str, dict]) -> ScriptedLLM:
    turns: list[dict] = [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls]
    return ScriptedLLM([*turns, {"content": "done"}])


def run_with(config: dict, llm: ScriptedLLM, check: Callable[[robotlab.Robot], None]) -> None:
    robot = robotlab.build(mcp=[config], llm=llm)
    try:
        robot.run("go", mcp="inherit", tools="inherit")
        check(robot)
    finally:
        robot.disconnect()


def test_a_robot_calls_a_tool_of_a_remote_server(server: tuple[str, Server]) -> None:
    kind, running = server
    llm = calling(("shout", {"text": "hi"}), ("header", {"name": "x-test"}))

    def check(robot: robotlab.Robot) -> None:
        assert robot.failed_mcp_server_names() == []
        assert sorted(t.name for t in robot.mcp_tools) == ["header", "shout", "stall"]
        assert {t.mcp for t in robot.mcp_tools} == {"remote"}

    run_with(remote(kind, running.url, 20), llm, check)
    assert llm.requests[2].tool_results() == ["HI", "1"]


def test_http_is_an_alias_of_streamable_http(server: tuple[str, Server]) -> None:
    kind, running = server
    alias = {"streamable-http": "http", "sse": "sse"}[kind]
    llm = calling(("shout", {"text": "alias"}))
    run_with(remote(alias, running.url, 20), llm, lambda robot: None)
    assert llm.requests[1].tool_results() == ["ALIAS"]


def test_a_call_past_the_server_timeout_is_a_retryable_error_for_the_model(
        server: tuple[str, Server]) -> None:
    kind, running = server
    llm = calling(("stall", {"seconds": 5}))
    run_with(remote(kind, running.url, 1), llm, lambda robot: None)
    assert llm.requests[1].tool_results() == [
        "Error (stall): MCP server did not respond within 1s (retryable)"]


def test_a_server_gone_mid_session_is_a_retryable_error(tmp_path: Path) -> None:
    running = Server(tmp_path, "streamable-http")
    source = connect_source(remote("streamable-http", running.url, 2))
    try:
        assert source.call_tool("shout", {"text": "up"}) == "UP"
        running.stop()
        with pytest.raises(MCPError) as caught:
            source.call_tool("shout", {"text": "down"})
        assert caught.value.retryable
    finally:
        source.close()


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("kind", ["streamable-http", "sse"])
def test_an_unreachable_server_is_recorded_as_failed_and_retryable(kind: str) -> None:
    url = f"http://127.0.0.1:{unused_port()}{PATHS[kind]}"
    with pytest.raises(MCPError, match="unreachable") as caught:
        connect_source(remote(kind, url, 5))
    assert caught.value.retryable
    robot = robotlab.build(mcp=[remote(kind, url, 5)], llm=ScriptedLLM([{"content": "went on"}]))
    assert robot.run("hi", mcp="inherit").reply == "went on"
    assert robot.failed_mcp_server_names() == ["remote"]


@pytest.mark.parametrize("kind", ["ws", "websocket"])
def test_websocket_needs_a_client_the_sdk_does_not_ship(kind: str) -> None:
    pytest.importorskip("mcp")
    try:
        import mcp.client.websocket  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("this mcp SDK has a websocket client")
    with pytest.raises(DependencyError, match="websockets"):
        connect_source(remote(kind, "ws://127.0.0.1:1/ws"))
    robot = robotlab.build(mcp=[remote(kind, "ws://127.0.0.1:1/ws")],
                           llm=ScriptedLLM([{"content": "ok"}]))
    robot.run("hi", mcp="inherit")
    assert robot.failed_mcp_server_names() == ["remote"]


def test_a_remote_server_needs_a_url() -> None:
    with pytest.raises(MCPError, match="needs a url"):
        connect_source({"name": "x", "transport": {"type": "sse"}})
