"""Structured output and the chat methods of spec 3: with_schema (validated, retried once),
with_thinking, with_headers, with_context, and the global chat.with_params defaults; through
the scripted model and through litellm's real HTTP path against the script server."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import robotlab
from robotlab.errors import ConfigError, InferenceError
from robotlab.robot.structured import RETRY_PROMPT
from robotlab.testing import ScriptedLLM, requests_seen, serve_script


class Verdict(BaseModel):
    score: int
    reason: str


VERDICT_SCHEMA = {"type": "object", "title": "verdict", "required": ["score"],
                  "properties": {"score": {"type": "integer", "minimum": 0}}}


def test_a_pydantic_schema_parses_the_reply_into_the_result() -> None:
    llm = ScriptedLLM([{"content": '```json\n{"score": 7, "reason": "tidy"}\n```'}])
    result = robotlab.build(llm=llm).with_schema(Verdict).run("judge it")
    assert result.parsed == Verdict(score=7, reason="tidy")
    assert result.to_dict()["parsed"] == {"score": 7, "reason": "tidy"}
    format_sent = llm.requests[0].params["response_format"]
    assert format_sent["type"] == "json_schema"
    assert format_sent["json_schema"]["name"] == "Verdict"
    assert format_sent["json_schema"]["schema"]["required"] == ["score", "reason"]


def test_an_invalid_reply_is_retried_once_with_the_error() -> None:
    llm = ScriptedLLM([{"content": '{"score": -1}'}, {"content": '{"score": 3}'}])
    result = robotlab.build(llm=llm).with_schema(VERDICT_SCHEMA).run("judge it")
    assert result.parsed == {"score": 3}
    assert result.input_tokens == 20  # both round trips are counted
    retry = llm.requests[1].last_user
    assert retry == RETRY_PROMPT.format(error="-1 is less than the minimum of 0 (at score)")


def test_a_second_invalid_reply_is_an_inference_error() -> None:
    llm = ScriptedLLM([{"content": "not json"}, {"content": '{"reason": "no score"}'},
                       {"content": "unused"}])
    robot = robotlab.build(llm=llm).with_schema(Verdict)
    with pytest.raises(InferenceError, match="did not match the schema after one retry: .*score"):
        robot.run("judge it")
    assert len(llm.requests) == 2
    assert "not JSON" in llm.requests[1].last_user or "Invalid JSON" in llm.requests[1].last_user


def test_with_schema_none_clears_it_and_bad_schemas_are_refused() -> None:
    llm = ScriptedLLM([{"content": "free text"}])
    robot = robotlab.build(llm=llm).with_schema(Verdict).with_schema(None)
    assert robot.run("x").parsed is None
    assert "response_format" not in llm.requests[0].params
    with pytest.raises(ConfigError, match="pydantic model class or a JSON schema dict, not str"):
        robot.with_schema("Verdict")
    with pytest.raises(ConfigError, match="not a valid JSON schema"):
        robot.with_schema({"type": "no-such-type"})


def test_thinking_headers_and_context_reach_the_request() -> None:
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}])
    robot = robotlab.build(llm=llm, model="m").with_thinking(effort="high").with_headers(
        X_Trace_Id="7")
    robot.with_headers({"X-Team": "ops"}).with_context(api_base="http://127.0.0.1:9/v1",
                                                       provider="openai")
    robot.run("x")
    params = llm.requests[0].params
    assert params["reasoning_effort"] == "high"
    assert params["extra_headers"] == {"X-Trace-Id": "7", "X-Team": "ops"}
    assert (params["api_base"], params["model"]) == ("http://127.0.0.1:9/v1", "openai/m")
    robot.with_thinking(budget=2048).run("y")
    assert llm.requests[1].params["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "reasoning_effort" not in llm.requests[1].params
    with pytest.raises(ConfigError, match="effort must be one of low, medium, high"):
        robot.with_thinking(effort="max")
    with pytest.raises(ConfigError, match="positive number of tokens"):
        robot.with_thinking(budget=0)
    with pytest.raises(TypeError, match="with_context takes .*; not temperature"):
        robot.with_context(temperature=1)


def test_global_with_params_are_defaults_a_robot_can_override() -> None:
    robotlab.configure(chat={"with_params": {"top_p": 0.5, "max_tokens": 64, "stop": ["END"],
                                             "presence_penalty": 0.1, "frequency_penalty": 0.2}})
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}])
    robotlab.build(llm=llm).run("x")
    robotlab.build(llm=llm, top_p=0.9, max_tokens=10).run("y")
    first, second = (r.params for r in llm.requests)
    assert {k: first[k]
            for k in ("top_p", "max_tokens", "stop", "presence_penalty", "frequency_penalty")} == {
        "top_p": 0.5, "max_tokens": 64, "stop": ["END"], "presence_penalty": 0.1,
        "frequency_penalty": 0.2}
    assert (second["top_p"], second["max_tokens"], second["stop"]) == (0.9, 10, ["END"])
    assert first["drop_params"] is True


def test_structured_output_and_headers_over_http() -> None:
    robotlab.configure(ruby_llm={"max_retries": 0, "request_timeout": 20})
    turns = [{"content": '{"score": "high"}'},
             {"content": json.dumps({"score": 9, "reason": "clear"})}]
    with serve_script(turns) as url:
        robot = robotlab.build(model="openai/scripted", api_base=url).with_schema(Verdict)
        result = robot.with_headers(X_Trace_Id="abc").run("judge it")
        bodies, headers = requests_seen(url), requests_seen(url, "headers")
    assert result.parsed == Verdict(score=9, reason="clear")
    assert bodies[0]["response_format"]["json_schema"]["name"] == "Verdict"
    assert bodies[1]["messages"][-1]["content"].startswith(
        "Your reply did not match the required JSON schema")
    assert headers[0]["x-trace-id"] == "abc"
