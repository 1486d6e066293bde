"""Robots against a real model server: plain, streamed and tool-using runs, deadlines, overflow."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

import robotlab
from robotlab.errors import InferenceError, ToolLoopError
from robotlab.errors.causes import EMPTY_STREAM, Cause
from robotlab.llm import LiteLLM
from tests.model.conftest import CONTEXT, END_OF_TEXT, ModelServer, wait_idle

SLACK = 1.5
"""Seconds a call may overrun its deadline: the deadline's promise is one second, plus a loaded
machine's scheduling."""


def robot(server: ModelServer, **options: Any) -> robotlab.Robot:
    return robotlab.build(name="real", **server.robot_settings(), temperature=0, **options)


def test_a_plain_run_returns_the_models_words_and_counts_its_tokens(
        model_server: ModelServer) -> None:
    result = robot(model_server, max_tokens=24).run("Reply with one word: hello.")
    assert isinstance(result.reply, str) and result.reply.strip()
    assert result.input_tokens > 0 and result.output_tokens > 0


def test_a_streamed_run_hears_every_chunk_of_its_reply(model_server: ModelServer) -> None:
    chunks: list[str] = []
    result = robot(model_server, max_tokens=24,
                   on_content=chunks.append).run("Count from one to five.")
    assert len(chunks) > 1
    assert "".join(chunks).strip() == (result.reply or "").strip()


def test_a_tool_using_run_goes_through_the_tool_loop(model_server: ModelServer) -> None:
    calls: list[dict[str, Any]] = []

    def add(arguments: dict[str, Any]) -> int:
        calls.append(arguments)
        return int(arguments.get("a", 0)) + int(arguments.get("b", 0))

    tool = robotlab.Tool.create(name="add", description="Add two integers a and b.",
                                parameters={"properties": {"a": {"type": "integer"},
                                                           "b": {"type": "integer"}},
                                            "required": ["a", "b"]}, handler=add)
    try:
        result = robot(model_server, max_tokens=128, local_tools=[tool], max_tool_rounds=3).run(
            "Use the add tool to add 2 and 3.", tools="inherit")
        recorded = result.tool_calls
    except ToolLoopError:  # a small model may call the tool again and again: the breaker ends it
        recorded = None
    # This model writes its calls as bare JSON text: they were parsed, and run with the arguments it
    # gave.
    assert calls, "the model's tool call was not parsed"
    assert all(isinstance(arguments.get("a"), int) and isinstance(arguments.get("b"), int)
               for arguments in calls)
    if recorded is not None:
        assert [call["result"] for call in recorded] == [arguments["a"] + arguments["b"]
                                                         for arguments in calls]
    else:
        assert len(calls) == 3


DEADLINE = 3.0


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
def test_a_long_reply_ends_at_its_deadline_and_the_server_is_let_go(model_server: ModelServer,
                                                                    generation_rate: float,
                                                                    streamed: bool) -> None:
    llm = LiteLLM(max_retries=3, timeout=DEADLINE)
    # Deadlines of work at the measured rate, its end-of-text banned: the reply cannot end on its
    # own before the deadline on any machine. Whole, it runs to its end on the server after the
    # client has gone (llama.cpp notices a closed connection only while streaming), so it is
    # kept to four deadlines; streamed, to twenty, so that a server still busy would show.
    deadlines = 20 if streamed else 4
    reply_tokens = min(CONTEXT - 256, max(64, math.ceil(generation_rate * DEADLINE * deadlines)))
    params = {"model": model_server.model, "api_base": model_server.url, "api_key": "x",
              "max_tokens": reply_tokens, "logit_bias": END_OF_TEXT}
    messages = [{"role": "user",
                 "content": "Write the numbers from 1 to 5000, separated by commas."}]
    import litellm  # noqa: F401  (a cold import takes seconds, and the deadline starts after it)

    started = time.monotonic()
    with pytest.raises(InferenceError) as caught:
        llm.complete(messages, [], params, (lambda _chunk: None) if streamed else None)
    took = time.monotonic() - started
    assert caught.value.cause == Cause.TIMEOUT
    assert took < DEADLINE + SLACK, f"{took:.1f}s for a {DEADLINE:.0f} s deadline"
    if streamed:
        # The abandoned stream was closed, so the server stopped generating: it is free at once,
        # well before the rest of the reply would have been generated.
        rest_of_reply = reply_tokens / generation_rate - DEADLINE
        assert wait_idle(model_server) < max(DEADLINE * 2, rest_of_reply / 2)
    else:
        wait_idle(model_server, timeout=100)


def _overflowing_messages() -> list[dict[str, str]]:
    return [{"role": "user", "content": "Summarise this: " + "lighthouse keeper " * CONTEXT}]


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
def test_a_context_overflow_is_named_and_sent_once(model_server: ModelServer,
                                                   streamed: bool) -> None:
    retries: list[dict[str, Any]] = []
    llm = LiteLLM(max_retries=3, timeout=60, on_retry=retries.append)
    params = {"model": model_server.model, "api_base": model_server.url, "api_key": "x",
              "max_tokens": 16}
    with pytest.raises(InferenceError) as caught:
        llm.complete(_overflowing_messages(), [], params, (lambda _chunk: None) if streamed
                     else None)
    assert caught.value.cause == Cause.CONTEXT_WINDOW
    assert not robotlab.retryable(caught.value)
    assert retries == []
    if streamed:
        assert EMPTY_STREAM in str(caught.value)
