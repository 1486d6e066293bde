"""``robotlab mcp-serve`` as a real process, driven by the ``mcp`` SDK's own client.

A real broker and real robotds: ``bob`` serves a model robot whose model is the script server
(``robotlab.testing``), the others host handlers from ``handlers/``. Over stdio the SDK's
client starts ``mcp-serve`` itself, as an IDE would, and stops it when the session closes; over
streamable HTTP the server runs on pytest-xprocess like every long-lived process here. The
stdio client speaks the 2026-07-28 protocol (changes come on a ``subscriptions/listen``
stream), the HTTP one the handshake-era protocol (``notifications/tools/list_changed``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from robotlab.testing import serve_script
from tests.process.conftest import ROBOT_READY, Processes, is_live, stop

pytestmark = pytest.mark.process

SECONDS = 60  # how long a step may take on two shared cores


def mcp_serve_argv(broker: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "robotlab.cli", "mcp-serve", "--broker", broker, "--interval",
            "0.2", *extra]


def tool_names(listed: types.ListToolsResult) -> list[str]:
    return [tool.name for tool in listed.tools]


def text_of(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.fixture
def served_bob(processes: Processes, broker: str) -> Iterator[None]:
    """``robotd --serve`` as bob, a model robot whose model answers "pong" (once)."""
    with ExitStack() as stack:
        api = stack.enter_context(serve_script([{"content": "pong"}]))
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker", broker,
                "--system-prompt", "You answer briefly.", "--model", "openai/scripted",
                "--api-base", api, "--serve"]
        processes.keep(argv, lambda proc: is_live(broker, "bob", proc), name="robotd-bob",
                       timeout=ROBOT_READY)
        yield


def over_stdio(argv: list[str], log: Path, session: Callable[[Client], Awaitable[None]]) -> None:
    """Start ``argv`` as the SDK's stdio client does (its stderr into ``log``) and run ``session``
    on it."""
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))

    async def scenario() -> None:
        with log.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await session(client)

    try:
        anyio.run(scenario)
    except BaseException:
        print(log.read_text(errors="replace"))  # shown in the failing test's report
        raise


def test_over_stdio_the_crew_is_listed_asked_and_followed(served_bob: None, broker: str,
                                                          start_robotd, tmp_path: Path) -> None:
    async def session(client: Client) -> None:
        assert tool_names(await client.list_tools()) == ["ask_bob"]
        answered = await client.call_tool("ask_bob", {"message": "ping"})
        assert (answered.is_error, text_of(answered)) == (False, "pong")
        async with client.listen(tools_list_changed=True) as changes:
            carol = await anyio.to_thread.run_sync(start_robotd, "carol")
            with anyio.fail_after(SECONDS):
                await changes.__anext__()
            assert tool_names(await client.list_tools()) == ["ask_bob", "ask_carol"]
            await anyio.to_thread.run_sync(stop, carol)
            with anyio.fail_after(SECONDS):
                await changes.__anext__()
            assert tool_names(await client.list_tools()) == ["ask_bob"]
        gone = await client.call_tool("ask_carol", {"message": "still there?"})
        assert gone.is_error
        assert text_of(gone).startswith("ask_carol: ")
        assert "no live robot named 'carol'" in text_of(gone)
        assert "\n" not in text_of(gone)

    over_stdio(mcp_serve_argv(broker), tmp_path / "mcp-serve.log", session)


def test_with_json_logs_every_stderr_line_is_one_object_and_stdout_stays_the_protocols(
        start_robotd, broker: str, tmp_path: Path) -> None:
    # Given mcp-serve over stdio logging JSON at DEBUG (the MCP SDK's lines included)
    start_robotd("echo", "handlers:echo")
    argv = mcp_serve_argv(broker, "--log-format", "json", "--log-level", "DEBUG")
    log = tmp_path / "mcp-serve.log"

    async def session(client: Client) -> None:
        assert tool_names(await client.list_tools()) == ["ask_echo"]
        answered = await client.call_tool("ask_echo", {"message": "hi"})
        assert not answered.is_error and text_of(answered).startswith("hi (from ")

    # When a client lists and calls the crew (a stray line on stdout would break its session)
    over_stdio(argv, log, session)
    # Then every line it wrote to stderr is one JSON object
    lines = log.read_text().splitlines()
    assert lines, "DEBUG logging wrote nothing"
    for line in lines:
        entry = json.loads(line)
        assert {"time", "level", "logger", "pid", "message"} <= set(entry), line


def test_with_json_logs_a_refused_bind_ends_on_a_json_line(broker: str) -> None:
    done = subprocess.run(mcp_serve_argv(broker, "--http", "0.0.0.0:0", "--log-format", "json"),
                          capture_output=True, text=True, timeout=SECONDS)
    assert done.returncode == 78 and done.stdout == ""
    last = json.loads(done.stderr.splitlines()[-1])
    assert last["level"] == "ERROR" and "refusing to serve MCP on 0.0.0.0:0" in last["message"]


@pytest.fixture
def mcp_http(processes: Processes, broker: str) -> Callable[..., tuple[str, Any]]:
    """Start ``mcp-serve --http 127.0.0.1:0``; return its URL (from its log) and its process."""

    def start(*extra: str) -> tuple[str, Any]:
        proc = processes.keep(mcp_serve_argv(broker, "--http", "127.0.0.1:0", *extra),
                              lambda proc: "serving MCP at" in proc.output(), name="mcp-serve")
        found = re.search(r"serving MCP at (http://\S+)", proc.output())
        assert found, proc.output()
        return found.group(1), proc

    return start


def test_over_http_a_robot_joining_or_leaving_is_announced_and_failures_are_tool_errors(
        mcp_http, start_robotd) -> None:
    start_robotd("echo", "handlers:echo")
    sloth = start_robotd("sloth", "handlers:hang")
    url, server = mcp_http("--timeout", "2")

    async def scenario() -> None:
        changed = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with Client(url, mode="legacy", message_handler=on_message) as client:
            tools = client.server_capabilities.tools
            assert tools is not None and tools.list_changed
            assert tool_names(await client.list_tools()) == ["ask_echo", "ask_sloth"]
            answered = await client.call_tool("ask_echo", {"message": "hi"})
            assert not answered.is_error and text_of(answered).startswith("hi (from ")
            slow = await client.call_tool("ask_sloth", {"message": "anything"})
            assert slow.is_error and text_of(slow).startswith(
                "ask_sloth: no reply from sloth within 2s")

            await anyio.to_thread.run_sync(start_robotd, "late")
            with anyio.fail_after(SECONDS):
                await changed.wait()
            assert tool_names(await client.list_tools()) == ["ask_echo", "ask_late", "ask_sloth"]

            changed = anyio.Event()
            await anyio.to_thread.run_sync(stop, sloth)
            with anyio.fail_after(SECONDS):
                await changed.wait()
            assert tool_names(await client.list_tools()) == ["ask_echo", "ask_late"]
            gone = await client.call_tool("ask_sloth", {"message": "hello?"})
            assert gone.is_error and "no live robot named 'sloth'" in text_of(gone)

        async with Client(url) as modern:  # a 2026-07-28 client of the same server
            assert tool_names(await modern.list_tools()) == ["ask_echo", "ask_late"]

    anyio.run(scenario)
    assert stop(server) == 0, server.output()
    assert "Traceback" not in server.output()


@pytest.mark.parametrize(("argv", "code", "line"), [
    (["--http", "0.0.0.0:0"], 78,
     "refusing to serve MCP on 0.0.0.0:0: it is reachable beyond this machine"),
    (["--http", "8765"], 64, "'8765' is not HOST:PORT"),
    (["--insecure"], 64, "--insecure is for --http HOST:PORT"),
])
def test_an_unsafe_or_bad_bind_is_refused_with_one_line(processes: Processes, broker: str,
                                                        argv: list[str], code: int,
                                                        line: str) -> None:
    proc = processes.start(mcp_serve_argv(broker, *argv), name="mcp-serve")
    assert proc.popen.wait(SECONDS) == code
    assert line in proc.output() and "Traceback" not in proc.output()


def test_a_bind_in_use_is_refused_with_one_line(mcp_http, processes: Processes,
                                                broker: str) -> None:
    url, _ = mcp_http()
    taken = url.removeprefix("http://").removesuffix("/mcp")
    proc = processes.start(mcp_serve_argv(broker, "--http", taken), name="mcp-serve")
    assert proc.popen.wait(SECONDS) == 78
    assert f"cannot listen on {taken}: Address already in use" in proc.output()


INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"
"""The MCP project's own inspector, whose ``--cli`` mode is a headless client (npm)."""


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    """The inspector's command line, fetched once into npm's cache; skipped where npx or the
    npm registry is not reachable (say which, so a missing check is never silent)."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed: the MCP inspector runs on Node")
    try:
        probe = subprocess.run([npx, "-y", INSPECTOR, "--help"], capture_output=True, text=True,
                               timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npx could not fetch {INSPECTOR} in 300s")
    if probe.returncode != 0:
        pytest.skip(f"npx could not run {INSPECTOR}: "
                    f"{(probe.stderr or probe.stdout).strip()[-300:]}")
    return [npx, "-y", INSPECTOR, "--cli"]


def inspect(inspector: list[str], *args: str) -> dict[str, Any]:
    done = subprocess.run([*inspector, *args], capture_output=True, text=True, timeout=SECONDS)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_the_mcp_inspector_lists_and_calls_the_crew(inspector: list[str], mcp_http, start_robotd,
                                                    broker: str) -> None:
    start_robotd("echo", "handlers:echo")
    stdio = mcp_serve_argv(broker)
    listed = inspect(inspector, *stdio, "--method", "tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ["ask_echo"]
    assert listed["tools"][0]["inputSchema"]["required"] == ["message"]
    called = inspect(inspector, *stdio, "--method", "tools/call", "--tool-name", "ask_echo",
                     "--tool-arg", "message=hi")
    assert called["isError"] is False and called["content"][0]["text"].startswith("hi (from ")
    url, _ = mcp_http()
    failed = inspect(inspector, url, "--transport", "http", "--method", "tools/call", "--tool-name",
                     "ask_nobody", "--tool-arg", "message=hi")
    assert failed["isError"] is True
    assert failed["content"][0]["text"].startswith("ask_nobody: ")
    assert "no live robot named 'nobody'" in failed["content"][0]["text"]
