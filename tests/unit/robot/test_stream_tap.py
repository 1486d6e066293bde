"""A ``StreamTap`` hears a tool call's arguments as they stream, from litellm over the script
server and from the in-process ``ScriptedLLM`` alike; a plain ``on_chunk`` hears text only."""

from __future__ import annotations

import json

from robotlab.llm import LiteLLM, StreamTap
from robotlab.testing import ScriptedLLM, serve_script

CONTENT = "a line of the file\n" * 30
TURN = {"content": "Writing it.", "argument_chunks": 6,
        "tool_calls": [{"name": "write", "arguments": {"path": "big.txt", "content": CONTENT},
                        "id": "call_1"}]}
MESSAGES = [{"role": "user", "content": "write it"}]


def listen() -> tuple[StreamTap, list[str], list[str]]:
    text: list[str] = []
    arguments: list[str] = []
    return StreamTap(text.append, arguments.append), text, arguments


def test_litellm_over_the_script_server_reports_each_argument_delta() -> None:
    tap, text, arguments = listen()
    with serve_script([TURN, TURN]) as url:
        params = {"model": "openai/scripted", "api_base": url, "api_key": "test"}
        reply = LiteLLM().complete(MESSAGES, [], params, tap)
        plain: list[str] = []
        LiteLLM().complete(MESSAGES, [], params, plain.append)
    assert "".join(text) == "Writing it." and "".join(plain) == "Writing it."
    assert len(arguments) == 6
    assert json.loads("".join(arguments)) == reply.tool_calls[0].arguments == {
        "path": "big.txt", "content": CONTENT}


def test_the_scripted_llm_streams_the_same_argument_pieces() -> None:
    tap, text, arguments = listen()
    reply = ScriptedLLM([TURN]).complete(MESSAGES, [], {"model": "scripted"}, tap)
    assert "".join(text) == "Writing it." and len(arguments) == 6
    assert json.loads("".join(arguments)) == reply.tool_calls[0].arguments
