"""A served robot whose conversation outgrows the model's context window keeps serving: the
oldest half goes and the task runs again (robotlab/robot/served_task.py)."""

from __future__ import annotations

import logging

import pytest

import robotlab
from robotlab.errors import InferenceError
from robotlab.robot.served_task import newer_half, run_fitting
from robotlab.robot.spawn import RemoteRobot
from robotlab.testing import ScriptedLLM

OVERFLOW = {"error": {"status": 400, "message": "this model's maximum context length is 1024 "
                                                "tokens; your messages resulted in 1100 tokens"}}


def test_a_served_robot_past_its_window_answers_from_its_newest_turns(robot, caplog) -> None:
    # Given bob, served, who has answered four tasks, and a model that refuses the fifth's
    # conversation whole but takes the newer half
    bob = robot("bob", ["a1", "a2", "a3", "a4", OVERFLOW, "a5"]).serve()
    alice = robot("alice")
    for number in range(1, 5):
        assert alice.ask("bob", f"q{number}", timeout=5).content == f"a{number}"
    # When alice asks again
    with caplog.at_level(logging.WARNING, logger="robotlab.robot"):
        reply = alice.ask("bob", "q5", timeout=5)
    # Then bob answers, from the two newest tasks and the new one, and says what it dropped
    assert reply.content == "a5"
    assert [m["content"] for m in bob.llm.requests[-1].messages if m["role"] != "system"] == [
        "q3", "a3", "q4", "a4", "q5"]
    assert "the oldest 4 of its 8 messages are dropped" in caplog.text


def test_the_conversation_is_halved_until_the_task_fits_then_emptied() -> None:
    llm = ScriptedLLM([{"content": f"a{n}"} for n in range(1, 5)]
                      + [OVERFLOW, OVERFLOW, OVERFLOW, {"content": "fits alone"}])
    bob = robotlab.build(name="bob", llm=llm)
    for number in range(1, 5):
        bob.run(f"q{number}")
    assert run_fitting(bob, "q5").reply == "fits alone"
    sent = [[m["content"] for m in request.messages if m["role"] != "system"]
            for request in llm.requests[4:]]
    assert sent == [["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4", "q5"],
                    ["q3", "a3", "q4", "a4", "q5"], ["q4", "a4", "q5"], ["q5"]]


def test_a_task_too_large_alone_and_other_failures_are_raised_as_they_are() -> None:
    bob = robotlab.build(name="bob", llm=ScriptedLLM([OVERFLOW]))
    with pytest.raises(InferenceError) as overflow:
        run_fitting(bob, "a task larger than any window")
    assert overflow.value.cause == "context_window"
    down = robotlab.build(name="bob", llm=ScriptedLLM([{"content": "a1"}, {"error": {
        "status": 503, "message": "the server is loading"}}]))
    down.run("q1")
    with pytest.raises(InferenceError, match="loading"):
        run_fitting(down, "q2")
    assert [m["content"] for m in down.conversation.log.messages()] == ["q1", "a1"]


def test_the_newer_half_starts_at_a_users_message() -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "t1"}]}
    result = {"role": "tool", "tool_call_id": "t1", "content": "42"}
    turns = [{"role": "user", "content": "q1"}, call, result,
             {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"},
             {"role": "assistant", "content": "a2"}]
    assert newer_half(turns) == turns[4:]
    assert newer_half(turns[:4]) == []  # no user's message in the newer half: nothing kept


def test_a_run_request_past_the_window_is_answered_too(robot) -> None:
    # spawn handles and delegation by name send run requests: the same tasks, the same conversation
    robot("bob", ["a1", "a2", OVERFLOW, "a3"]).serve()
    remote = RemoteRobot("bob", robot("alice"))
    assert [remote.run(f"q{number}").reply for number in range(1, 4)] == ["a1", "a2", "a3"]


def test_a_network_task_past_the_window_is_answered_too() -> None:
    from robotlab.robot.remote_tasks import TaskServer

    bob = robotlab.build(name="bob", llm=ScriptedLLM([{"content": "a1"}, OVERFLOW,
                                                      {"content": "a2"}]))
    tasks = TaskServer(bob, "inproc://no-memory-asked-for")
    assert [tasks.handle({"message": f"q{number}"})["reply"] for number in (1, 2)] == ["a1", "a2"]


def cut(content: str, tokens: int) -> dict:
    """A reply the server stopped with ``finish_reason`` ``length`` after ``tokens`` tokens."""
    return {"content": content, "finish_reason": "length",
            "usage": {"prompt_tokens": 1000, "completion_tokens": tokens}}


def test_a_reply_the_window_cut_short_is_asked_again_from_the_newer_half(caplog) -> None:
    # Given bob after four tasks, and a server that answers the fifth but stops when its window
    # is full (as llama.cpp's does), far below any max_tokens
    llm = ScriptedLLM([{"content": f"a{n}"} for n in range(1, 5)]
                      + [cut("Three col", 24), {"content": "Three colours: red, green, blue"}])
    bob = robotlab.build(name="bob", llm=llm, max_tokens=512)
    for number in range(1, 5):
        bob.run(f"q{number}")
    # When the fifth task is served
    with caplog.at_level(logging.WARNING, logger="robotlab.robot"):
        result = run_fitting(bob, "q5")
    # Then it runs again from the newer half, and the cut reply is not in the conversation
    assert result.reply == "Three colours: red, green, blue" and not result.truncated
    assert [m["content"] for m in llm.requests[-1].messages] == ["q3", "a3", "q4", "a4", "q5"]
    assert [m["content"] for m in bob.conversation.log.messages()] == [
        "q3", "a3", "q4", "a4", "q5", "Three colours: red, green, blue"]
    assert "cut its reply short after 24 tokens; the oldest 4 of its 8 messages" in caplog.text
    # and the cut is logged once, as what was done: not also as advice to shorten the conversation
    assert "a reply was cut" not in caplog.text


def test_a_reply_cut_by_max_tokens_or_after_a_tool_ran_or_alone_is_returned_as_it_is(
        caplog) -> None:
    limited = robotlab.build(name="bob", max_tokens=24,
                             llm=ScriptedLLM([{"content": "a1"}, cut("a long", 24)]))
    limited.run("q1")
    with caplog.at_level(logging.WARNING, logger="robotlab.robot"):
        assert run_fitting(limited, "q2").truncated  # max_tokens cut it: asking again cuts it again
    # returned cut: the one warning says which limit to raise
    assert caplog.text.count("a reply was cut at max_tokens=24") == 1, caplog.text
    assert len(limited.llm.requests) == 2
    note = robotlab.Tool.create(name="note", handler=lambda args: "noted")
    tooled = robotlab.build(name="bob", local_tools=[note], llm=ScriptedLLM([
        {"content": "a1"}, {"tool_calls": [{"name": "note", "arguments": {}, "id": "c1"}]},
        cut("noted, and", 7)]))
    tooled.run("q1")
    assert run_fitting(tooled, "q2", tools="inherit").truncated  # the tool is not run twice
    assert len(tooled.llm.requests) == 3
    alone = robotlab.build(name="bob", llm=ScriptedLLM([cut("a task that fills", 9)]))
    assert run_fitting(alone, "a task that fills the window alone").truncated
