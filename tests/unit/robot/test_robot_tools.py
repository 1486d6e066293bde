"""Tools (spec 5, 14): building them, which ones a run sends, the cap, and failures."""

from __future__ import annotations

import logging
from typing import Literal

import pytest

import robotlab
from robotlab import Tool
from robotlab.testing import ScriptedLLM


def make_tool(name: str) -> Tool:
    return Tool.create(name=name, description=f"tool {name}", handler=lambda args: name)


def tools_sent(robot_tools: list[Tool], **run_kwargs: object) -> list[str]:
    llm = ScriptedLLM([{"content": "ok"}])
    robotlab.build(local_tools=robot_tools, llm=llm,
                   **run_kwargs.pop("build", {})).run("m", **run_kwargs)
    return llm.requests[0].tool_names


def test_resolution_of_run_values() -> None:
    a, b = make_tool("a"), make_tool("b")
    assert tools_sent([a, b]) == []
    assert tools_sent([a, b], tools="inherit") == ["a", "b"]
    assert tools_sent([a, b], tools=["a"]) == ["a"]
    assert tools_sent([a, b], tools=None) == ["a", "b"]
    assert tools_sent([a, b], tools=[]) == []


def test_the_standalone_table() -> None:
    a = make_tool("a")
    assert tools_sent([a], tools="inherit", build={"tools": "none"}) == ["a"]
    assert tools_sent([a], tools="inherit", build={"tools": "inherit"}) == []
    assert tools_sent([a], tools="inherit", build={"tools": ["a"]}) == ["a"]


def test_network_config_is_the_parent_of_build_inherit() -> None:
    llm = ScriptedLLM([{"content": "ok"}])
    robot = robotlab.build(local_tools=[make_tool("a"), make_tool("b")], tools="inherit", llm=llm)
    robot.run("m", tools="inherit", network_config=robotlab.RunConfig(tools=["b"]))
    assert llm.requests[0].tool_names == ["b"]


def test_a_run_list_replaces_the_build_allowlist() -> None:
    assert tools_sent([make_tool("a"), make_tool("b")], tools=["b"],
                      build={"tools": ["a"]}) == ["b"]


def test_tool_list_is_replaced_every_turn() -> None:
    llm = ScriptedLLM([{"content": "1"}, {"content": "2"}, {"content": "3"}])
    robot = robotlab.build(local_tools=[make_tool("a"), make_tool("b")], llm=llm)
    robot.run("one", tools="inherit")
    robot.run("two", tools="none")
    robot.run("three", tools=["nothing-matches"])
    assert [r.tool_names for r in llm.requests] == [["a", "b"], [], []]


def test_cap_of_128_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    many = [make_tool(f"t{i}") for i in range(150)]
    with caplog.at_level(logging.WARNING, logger="robotlab.robot.robot"):
        sent = tools_sent(many, tools="inherit", build={"config": {"max_tools": 0}})
    assert len(sent) == 128
    warnings = [r.getMessage() for r in caplog.records if "max_tools" in r.getMessage()]
    assert len(warnings) == 1
    assert "dropping 22" in warnings[0]
    assert len(tools_sent(many, tools="inherit", build={"config": {"max_tools": 50}})) == 50


def test_decorator_builds_the_schema_from_hints_and_docstring() -> None:
    @robotlab.tool
    def search(query: str, limit: int = 5, tags: list[str] | None = None,
               mode: Literal["fast", "deep"] = "fast") -> str:
        """Search the index.

        Args:
            query: what to look for,
                in plain words.
            limit: how many hits.
            tags: filters.
            mode: how hard to look.
        """
        return query

    schema = search.to_json_schema()["function"]
    assert schema["name"] == "search"
    assert schema["description"] == "Search the index."
    props = schema["parameters"]["properties"]
    assert props["query"] == {"type": "string", "description": "what to look for, in plain words."}
    assert props["limit"]["type"] == "integer"
    assert props["tags"]["type"] == "array" and props["tags"]["items"] == {"type": "string"}
    assert props["mode"]["enum"] == ["fast", "deep"]
    assert schema["parameters"]["required"] == ["query"]


def test_decorated_tool_may_receive_the_robot() -> None:
    @robotlab.tool
    def whoami(robot: object) -> str:
        """Name the robot."""
        return robot.name  # type: ignore[attr-defined]

    assert "robot" not in whoami.parameters["properties"]
    llm = ScriptedLLM([{"tool_calls": [{"name": "whoami"}]}, {"content": "ok"}])
    robotlab.build(name="rosie", local_tools=[whoami], llm=llm).run("who?", tools="inherit")
    assert llm.requests[1].tool_results() == ["rosie"]


def test_create_from_a_json_schema() -> None:
    created = Tool.create(name="x", parameters={"properties": {"q": {"description": "query"}},
                                                "required": ["q"]},
                          handler=lambda args: args["q"].upper())
    params = created.to_json_schema()["function"]["parameters"]
    assert params["required"] == ["q"]
    assert params["properties"]["q"] == {"type": "string", "description": "query"}
    assert created.call({"q": "hi"}) == "HI"


def test_subclass_names_and_raise_on_error_is_not_inherited() -> None:
    class StrictTool(Tool):
        raise_on_error = True

    class ChildTool(StrictTool):
        pass

    assert StrictTool().name == "strict"
    assert StrictTool.raises_on_error() is True
    assert ChildTool.raises_on_error() is False


def failing_robot(tool: Tool, llm: ScriptedLLM) -> robotlab.Robot:
    return robotlab.build(local_tools=[tool], llm=llm)


def test_a_failing_tool_reports_to_the_model_and_the_run_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    boom = Tool.create(name="t", handler=lambda args: (_ for _ in ()).throw(RuntimeError("boom")))
    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}]}, {"content": "recovered"}])
    with caplog.at_level(logging.WARNING, logger="robotlab.tool"):
        assert failing_robot(boom, llm).run("go", tools="inherit").reply == "recovered"
    assert llm.requests[1].tool_results() == ["Error (t): boom"]
    assert any("boom" in r.getMessage() for r in caplog.records)


def test_raise_on_error_propagates_out_of_run() -> None:
    class Strict(Tool):
        name = "t"
        raise_on_error = True

        def execute(self) -> str:
            raise RuntimeError("boom")

    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}]}, {"content": "unused"}])
    with pytest.raises(RuntimeError, match="boom"):
        failing_robot(Strict(), llm).run("go", tools="inherit")


def test_unknown_tool_name_is_reported_to_the_model() -> None:
    llm = ScriptedLLM([{"tool_calls": [{"name": "ghost"}]}, {"content": "ok"}])
    robotlab.build(local_tools=[make_tool("a")], llm=llm).run("go", tools="inherit")
    assert llm.requests[1].tool_results()[0].startswith("Error (ghost):")


def test_tool_callbacks_see_each_call_and_result() -> None:
    seen: list[object] = []
    llm = ScriptedLLM([{"tool_calls": [{"name": "a", "arguments": {"x": 1}}]}, {"content": "ok"}])
    robot = robotlab.build(local_tools=[make_tool("a")], llm=llm,
                           on_tool_call=lambda call: seen.append(
                               ("call", call.name, call.arguments)),
                           on_tool_result=lambda result: seen.append(("result", result)))
    result = robot.run("go", tools="inherit")
    assert seen == [("call", "a", {"x": 1}), ("result", "a")]
    assert result.tool_calls == [{"name": "a", "arguments": {"x": 1}, "result": "a"}]


def test_mcp_servers_resolve_like_tools_and_failures_are_recorded() -> None:
    robot = robotlab.build(mcp="inherit", llm=ScriptedLLM([{"content": "ok"}, {"content": "ok"}]))
    robot.run("m")
    assert robot.failed_mcp_server_names() == []
    robot.run("m", mcp="inherit")
    assert robot.failed_mcp_server_names() == ["none"]
