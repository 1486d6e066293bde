"""``Robot.run`` (spec 4, 6, 12): result text, memory, streaming, conversation, learnings."""

from __future__ import annotations

import robotlab
from robotlab import RobotResult
from robotlab.testing import ScriptedLLM


def test_thinking_text_is_the_reply_when_content_is_empty() -> None:
    robot = robotlab.build(llm=ScriptedLLM([{"content": None, "reasoning_content": "T"}]))
    assert robot.run("hi").reply == "T"


def test_reply_is_none_when_only_an_earlier_turn_had_text() -> None:
    robot = robotlab.build(llm=ScriptedLLM([{"content": "first"}, {"content": None}]))
    assert robot.run("one").reply == "first"
    assert robot.run("two").reply is None


def test_text_written_beside_a_tool_call_is_the_fallback_reply() -> None:
    @robotlab.tool
    def look() -> str:
        """Look around."""
        return "nothing"

    llm = ScriptedLLM([{"content": "Let me look.", "tool_calls": [{"name": "look"}]},
                       {"content": None}])
    assert robotlab.build(local_tools=[look],
                          llm=llm).run("go", tools="inherit").reply == "Let me look."


def test_result_carries_tokens_cost_duration_and_identity() -> None:
    turn = {"content": "x", "usage": {"prompt_tokens": 7, "completion_tokens": 3}}
    robot = robotlab.build(name="bob", llm=ScriptedLLM([turn]))
    result = robot.run("hi")
    assert (result.robot_name, result.input_tokens, result.output_tokens,
            result.cost) == ("bob", 7, 3, 0.0)
    assert result.duration is not None and result.duration >= 0
    assert len(result.id) == 36
    assert (robot.total_input_tokens, robot.total_output_tokens) == (7, 3)


def test_result_round_trips_through_plain_data() -> None:
    result = robotlab.build(llm=ScriptedLLM([{"content": "x"}])).run("hi")
    data = result.to_dict()
    assert "raw" not in data
    assert RobotResult.from_dict(data) == result
    assert result.last_text_content == "x"
    assert len(result.checksum()) == 64


def test_error_result_for_pipelines() -> None:
    result = RobotResult.from_error("r", RuntimeError("boom"), 0.1)
    assert result.reply == "Error: RuntimeError: boom"
    assert result.duration == 0.1


def test_memory_dict_is_merged_into_the_robot_memory_with_the_robot_as_writer() -> None:
    robot = robotlab.build(name="writer", llm=ScriptedLLM([{"content": "ok"}]))
    seen = []
    robot.memory.subscribe("k", callback=lambda change: seen.append(change.writer))
    robot.run("hi", memory={"k": 1})
    assert robot.memory.get("k") == 1
    robot.memory.flush(timeout=2)
    assert seen == ["writer"]


def test_memory_object_replaces_the_active_memory() -> None:
    shared = robotlab.create_memory()
    robotlab.build(llm=ScriptedLLM([{"content": "ok"}])).run("hi", memory=shared)
    assert shared.current_writer is None


def test_conversation_persists_across_runs() -> None:
    llm = ScriptedLLM([{"content": "one"}, {"content": "two"}])
    robot = robotlab.build(system_prompt="S", llm=llm)
    robot.run("first")
    robot.run("second")
    roles = [m["role"] for m in llm.requests[1].messages]
    assert roles == ["system", "user", "assistant", "user"]
    robot.clear_messages()
    assert robot.messages == [{"role": "system", "content": "S"}]


def test_stored_and_per_call_content_callbacks_fire_in_order() -> None:
    calls: list[str] = []
    robot = robotlab.build(on_content=lambda c: calls.append(f"S({c})"),
                           llm=ScriptedLLM([{"chunks": ["a", "b"]}]))
    robot.run("hi", on_content=lambda c: calls.append(f"B({c})"))
    assert calls == ["S(a)", "B(a)", "S(b)", "B(b)"]


def test_only_a_stored_callback_streams_and_the_reply_is_the_chunks_joined() -> None:
    chunks: list[str] = []
    llm = ScriptedLLM([{"chunks": ["hel", "lo"]}])
    result = robotlab.build(on_content=chunks.append, llm=llm).run("hi")
    assert llm.requests[0].streamed
    assert result.reply == "".join(chunks) == "hello"


def test_no_callback_means_no_streaming() -> None:
    llm = ScriptedLLM([{"content": "x"}])
    robotlab.build(llm=llm).run("hi")
    assert not llm.requests[0].streamed


def test_streaming_disabled_gives_the_callback_each_reply_whole() -> None:
    robotlab.configure(streaming_enabled=False)
    chunks: list[str] = []
    tool = robotlab.Tool.create(name="t", handler=lambda args: "ok")
    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}]}, {"chunks": ["hel", "lo"]}])
    robot = robotlab.build(local_tools=[tool], on_content=chunks.append, llm=llm)
    result = robot.run("hi", tools="inherit")
    assert [request.streamed for request in llm.requests] == [False, False]
    assert chunks == ["hello"] and result.reply == "hello"


def test_learn_keeps_the_broader_lesson() -> None:
    robot = robotlab.build()
    robot.learn("avoid puts").learn("avoid puts and p in prod")
    assert robot.learnings == ["avoid puts and p in prod"]
    robot.learn("avoid puts")
    assert robot.learnings == ["avoid puts and p in prod"]
    assert robot.memory.get("learnings") == ["avoid puts and p in prod"]


def test_learnings_are_prepended_to_the_message() -> None:
    llm = ScriptedLLM([{"content": "ok"}])
    robot = robotlab.build(llm=llm).learn("X")
    robot.run("do it")
    assert llm.requests[0].last_user == "LEARNINGS FROM PREVIOUS RUNS:\n- X\n\ndo it"


def test_blank_learning_adds_nothing_and_fires_no_hooks() -> None:
    fired: list[str] = []

    class Watch(robotlab.Hook):
        def before_learn(self, ctx: object) -> None:
            fired.append("before")

        def on_learn(self, ctx: object) -> None:
            fired.append("on")

    robot = robotlab.build().on(Watch)
    robot.learn("   ")
    assert robot.learnings == []
    assert fired == []
    robot.learn("real")
    assert fired == ["before", "on"]


def test_bare_json_tool_call_in_text_is_run_as_a_tool_call() -> None:
    @robotlab.tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return f"sunny in {city}"

    text = '```json\n{"name": "weather", "arguments": {"city": "Oslo"}}\n```'
    llm = ScriptedLLM([{"content": text}, {"content": "It is sunny."}])
    result = robotlab.build(local_tools=[weather], llm=llm).run("weather?", tools="inherit")
    assert result.reply == "It is sunny."
    assert llm.requests[1].tool_results() == ["sunny in Oslo"]


def test_bare_json_is_plain_text_when_no_tools_were_offered() -> None:
    text = '{"name": "weather", "arguments": {"city": "Oslo"}}'
    assert robotlab.build(llm=ScriptedLLM([{"content": text}])).run("hi").reply == text


def test_sync_delegation_marks_the_result() -> None:
    manager = robotlab.build(name="manager")
    worker = robotlab.build(name="worker", llm=ScriptedLLM([{"content": "done"}]))
    result = manager.delegate(worker, "work")
    assert (result.reply, result.delegated_by) == ("done", "manager")
