"""Every robot's replies are bounded: ``chat.with_params.max_tokens`` by default (4096), a robot's
own ``max_tokens`` over it, 0 for no cap; a reply the limit cut is reported, never returned as if
whole (``RobotResult.truncated``, ``stop_reason``, a WARNING naming the limit)."""

from __future__ import annotations

import logging

import pytest

import robotlab
from robotlab.testing import ScriptedLLM, requests_seen, serve_script

CUT = {"content": "The answer begins and then", "finish_reason": "length",
       "usage": {"completion_tokens": 50}}


def test_every_robot_gets_the_global_default_cap_and_its_own_wins() -> None:
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}, {"content": "c"}])
    robotlab.build(llm=llm).run("hi")
    robotlab.build(llm=llm, max_tokens=200).run("hi")
    robotlab.configure(chat={"with_params": {"max_tokens": 1000}})
    robotlab.build(llm=llm).run("hi")
    assert [request.params["max_tokens"] for request in llm.requests] == [4096, 200, 1000]


def test_zero_means_no_cap_for_one_robot_or_for_all() -> None:
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}])
    robotlab.build(llm=llm, max_tokens=0).run("hi")
    robotlab.configure(chat={"with_params": {"max_tokens": 0}})
    robotlab.build(llm=llm).run("hi")
    assert ["max_tokens" in request.params for request in llm.requests] == [False, False]


def test_the_cap_alone_does_not_make_explicit_settings_droppable() -> None:
    robotlab.configure(chat={"with_temperature": None})
    llm = ScriptedLLM([{"content": "a"}])
    robotlab.build(llm=llm, temperature=0.3).run("hi")
    assert llm.requests[0].params["max_tokens"] == 4096
    assert "drop_params" not in llm.requests[0].params


def test_a_whole_reply_is_not_truncated() -> None:
    result = robotlab.build(llm=ScriptedLLM([{"content": "all of it"}])).run("hi")
    assert (result.truncated, result.stop_reason, result.stopped()) == (False, None, False)


def test_a_cut_reply_is_reported_with_the_limit_and_how_to_raise_it(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="robotlab.robot"):
        result = robotlab.build(name="bob", llm=ScriptedLLM([CUT]), max_tokens=50).run("hi")
    assert result.reply == CUT["content"]
    assert (result.truncated, result.stop_reason, result.stopped()) == (True, "max_tokens", True)
    assert result.to_dict()["truncated"] is True
    [record] = [r for r in caplog.records if r.name == "robotlab.robot"]
    assert record.levelno == logging.WARNING
    assert "robot bob: a reply was cut at max_tokens=50" in record.getMessage()
    assert "chat.with_params.max_tokens" in record.getMessage()
    assert "--max-tokens" in record.getMessage()


def test_a_caller_that_handles_cut_replies_gets_the_limit_and_the_robot_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cuts: list[int | None] = []
    with caplog.at_level(logging.WARNING, logger="robotlab.robot"):
        result = robotlab.build(llm=ScriptedLLM([CUT]), max_tokens=50,
                                on_truncated=cuts.append).run("hi")
    assert result.truncated and cuts == [50]
    assert [r for r in caplog.records if r.name == "robotlab.robot"] == []


def test_a_cut_tool_call_round_marks_the_run_but_not_its_final_reply() -> None:
    echo = robotlab.Tool.create(name="echo", handler=lambda args: "ok")
    turns = [{"tool_calls": [{"name": "echo", "arguments": {}}], "finish_reason": "length"},
             {"content": "done"}]
    result = robotlab.build(llm=ScriptedLLM(turns), local_tools=[echo]).run("go", tools="inherit")
    assert (result.reply, result.truncated, result.stop_reason) == ("done", True, None)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_finish_reason_length_over_http_is_seen(streamed: bool) -> None:
    robotlab.configure(ruby_llm={"max_retries": 0, "request_timeout": 20})
    with serve_script([CUT]) as url:
        robot = robotlab.build(model="openai/scripted", api_base=url, max_tokens=50)
        result = robot.run("hi", on_content=(lambda _chunk: None) if streamed else None)
        [sent] = requests_seen(url)
    assert sent["max_tokens"] == 50
    assert (result.truncated, result.stop_reason) == (True, "max_tokens")
    assert result.raw.finish_reason == "length"


def test_a_reply_cut_under_max_tokens_is_logged_as_the_context_window_being_full(caplog) -> None:
    window_cut = {**CUT, "usage": {"completion_tokens": 12}}
    with caplog.at_level(logging.WARNING, logger="robotlab.robot"):
        result = robotlab.build(name="bob", llm=ScriptedLLM([window_cut]), max_tokens=50).run("hi")
    assert result.truncated
    [record] = [r for r in caplog.records if r.name == "robotlab.robot"]
    assert record.getMessage().startswith(
        "robot bob: a reply was cut after 12 tokens, under max_tokens=50 (finish_reason "
        "'length'): the model's context window was full")
