"""MCP servers as tool sources (spec 5, 25): resolution, a real stdio server, failures recorded."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import robotlab
from robotlab import MCPError
from robotlab.testing import ScriptedLLM
from robotlab.tools.mcp import connect_source
from robotlab.tools.mcp_client import server_timeout

CLOSED = "http://127.0.0.1:9/sse"
"""A local port nothing listens on: connecting is refused at once."""

SERVER = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer("demo")


@app.tool()
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


app.run()
'''


def stdio(name: str, script: Path, timeout: float | None = None) -> dict:
    return {"name": name,
            "transport": {"type": "stdio", "command": sys.executable, "args": [str(script)]},
            "timeout": timeout}


@pytest.mark.parametrize(("given", "seconds"), [(None, 15.0), (30, 30.0), (5000, 5.0), (0.5, 1.0)])
def test_server_timeouts(given: float | None, seconds: float) -> None:
    assert server_timeout(given) == seconds


def test_tools_of_a_stdio_server_are_offered_and_called(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    llm = ScriptedLLM([{"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}}]},
                       {"content": "done"}])
    robot = robotlab.build(mcp=[stdio("demo", script, 30)], llm=llm)
    try:
        result = robot.run("shout hi", mcp="inherit", tools="inherit")
        assert result.reply == "done"
        assert llm.requests[0].tool_names == ["shout"]
        assert llm.requests[1].tool_results() == ["HI"]
        assert robot.failed_mcp_server_names() == []
        assert [t.mcp for t in robot.mcp_tools] == ["demo"]
    finally:
        robot.disconnect()
    assert robot.mcp_tools == []


def test_a_server_that_never_answers_fails_after_its_timeout(tmp_path: Path) -> None:
    script = tmp_path / "mute.py"
    script.write_text("import sys\nsys.stdin.read()\n")
    llm = ScriptedLLM([{"content": "went on"}])
    robot = robotlab.build(mcp=[stdio("mute", script, 1)], llm=llm)
    started = time.monotonic()
    assert robot.run("hi", mcp="inherit", tools="inherit").reply == "went on"
    assert time.monotonic() - started < 8
    assert robot.failed_mcp_server_names() == ["mute"]
    assert llm.requests[0].tool_names == []


def test_invalid_configs_are_errors_naming_the_problem() -> None:
    with pytest.raises(MCPError, match="Invalid server config"):
        connect_source("none")
    with pytest.raises(MCPError, match="Invalid transport type: streamable_http"):
        connect_source({"name": "x", "transport": {"type": "streamable_http", "url": CLOSED}})
    with pytest.raises(MCPError, match="command not found"):
        connect_source({"name": "x",
                        "transport": {"type": "stdio", "command": "no-such-command-here"}})


def test_failed_servers_are_retried_on_later_runs_and_new_ones_are_not_added(
        tmp_path: Path) -> None:
    robot = robotlab.build(mcp=[{"name": "bad", "transport": {"type": "sse", "url": CLOSED}}],
                           llm=ScriptedLLM([{"content": "1"}, {"content": "2"}, {"content": "3"}]))
    robot.run("one")
    assert robot.failed_mcp_server_names() == []
    robot.run("two", mcp="inherit")
    assert robot.failed_mcp_server_names() == ["bad"]
    robot.run("three", mcp=[{"name": "late", "transport": {"type": "sse", "url": CLOSED}}])
    assert robot.failed_mcp_server_names() == ["bad"]


def test_discovery_connects_only_the_relevant_servers() -> None:
    fs = {"name": "fs", "description": "read write files",
          "transport": {"type": "sse", "url": CLOSED}}
    brew = {"name": "brew", "description": "install macOS packages",
            "transport": {"type": "sse", "url": CLOSED}}
    robot = robotlab.build(mcp=[fs, brew], mcp_discovery=True, llm=ScriptedLLM([{"content": "ok"}]))
    robot.run("install imagemagick", mcp="inherit")
    assert robot.failed_mcp_server_names() == ["brew"]


def test_discovery_leaves_the_list_alone_when_nothing_matches() -> None:
    from robotlab.tools.mcp import discover

    servers = [{"name": "fs", "description": "read write files"}, {"name": "web"}]
    assert discover(servers, "bake a cake") == servers
    assert discover(servers, "   ") == servers
    assert discover([{"name": "a"}], "anything") == [{"name": "a"}]


def test_injected_sources_are_mcp_tools_after_local_ones() -> None:
    from robotlab.testing import DictToolSource

    source = DictToolSource("kb", {"lookup": lambda args: f"found {args['q']}"})
    local = robotlab.Tool.create(name="local", handler=lambda args: "l")
    llm = ScriptedLLM([{"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]},
                       {"content": "ok"}])
    robot = robotlab.build(local_tools=[local], llm=llm).inject_mcp([source])
    robot.run("find x", tools="inherit")
    assert llm.requests[0].tool_names == ["local", "lookup"]
    assert llm.requests[1].tool_results() == ["found x"]
    assert source.calls == [("lookup", {"q": "x"})]
    robot.disconnect()
    assert source.closed and robot.mcp_tools == []
