"""MCP resources (list, read) and prompts (list, get) through the official SDK, against the
reference server ``@modelcontextprotocol/server-everything`` over stdio and streamable HTTP,
and used from a robot: a resource as an attachment, a prompt as the message."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import robotlab
from robotlab.errors import MCPError
from robotlab.testing import ScriptedLLM
from robotlab.tools.mcp import connect_source
from robotlab.tools.mcp_client import MCPClient

DOC = "demo://resource/static/document/architecture.md"


@pytest.fixture
def stdio_client(everything_js: str) -> Iterator[MCPClient]:
    client = connect_source({"name": "everything", "timeout": 30,
                             "transport": {"type": "stdio", "command": "node",
                                           "args": [everything_js, "stdio"]}})
    yield client
    client.close()


def test_resources_are_listed_and_read(stdio_client: MCPClient) -> None:
    listed = {r["uri"]: r for r in stdio_client.list_resources()}
    assert listed[DOC]["mime_type"] == "text/markdown"
    assert listed[DOC]["name"] == "architecture.md"
    [content] = stdio_client.read_resource(DOC)
    assert content["uri"] == DOC
    assert content["text"].startswith("# Everything Server")


def test_an_unknown_resource_is_the_servers_refusal(stdio_client: MCPClient) -> None:
    with pytest.raises(MCPError) as refused:
        stdio_client.read_resource("demo://resource/static/document/no-such-file.md")
    assert refused.value.retryable is None  # a refusal, not a lost connection
    assert "everything" in str(refused.value)


def test_prompts_are_listed_and_rendered_by_the_server(stdio_client: MCPClient) -> None:
    prompts = {p["name"]: p for p in stdio_client.list_prompts()}
    assert {"simple-prompt", "args-prompt"} <= set(prompts)
    arguments = {a["name"]: a["required"] for a in prompts["args-prompt"]["arguments"]}
    assert arguments["city"] is True
    [message] = stdio_client.get_prompt("args-prompt", {"city": "Paris", "state": "Texas"})
    assert message["role"] == "user"
    assert "Paris" in message["content"] and "Texas" in message["content"]
    with pytest.raises(MCPError):
        stdio_client.get_prompt("args-prompt", {})  # city is required


def test_a_robot_uses_a_resource_as_an_attachment_and_a_prompt_as_its_message(
        stdio_client: MCPClient) -> None:
    llm = ScriptedLLM([{"content": "summary"}, {"content": "weather"}])
    robot = robotlab.build(llm=llm).inject_mcp([stdio_client])
    robot.run("Summarise the attached document.", with_=stdio_client.resource_part(DOC))
    text, part = llm.requests[0].messages[-1]["content"]
    assert text == {"type": "text", "text": "Summarise the attached document."}
    assert part["type"] == "text" and part["text"].startswith(f"--- {DOC} ---\n# Everything Server")
    [prompt] = stdio_client.get_prompt("args-prompt", {"city": "Oslo", "state": "Viken"})
    robot.run(prompt["content"])
    assert "Oslo" in llm.requests[1].last_user


def test_resources_and_prompts_over_streamable_http(everything_http: str) -> None:
    client = connect_source({"name": "everything-http", "timeout": 30,
                             "transport": {"type": "streamable-http", "url": everything_http}})
    try:
        assert DOC in [r["uri"] for r in client.list_resources()]
        assert client.read_resource(DOC)[0]["text"].startswith("# Everything Server")
        assert client.get_prompt("simple-prompt")[0]["content"] == ("This is a simple prompt "
                                                                    "without arguments.")
    finally:
        client.close()
