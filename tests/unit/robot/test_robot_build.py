"""Building robots (spec 2, 3, 23): names, tool-name validation, config precedence, readers."""

from __future__ import annotations

import pytest

import robotlab
from robotlab import RunConfig
from robotlab.testing import ScriptedLLM


class Calculator(robotlab.Tool):
    description = "Adds."
    parameters = {"type": "object", "properties": {"a": {"type": "integer"}}}

    def execute(self, a: int = 0) -> int:
        return a + 1


def test_build_without_arguments_is_named_robot_and_names_are_not_generated() -> None:
    first, second = robotlab.build(), robotlab.build()
    assert first.name == "robot"
    assert second.name == "robot"


def test_tools_given_as_instances_raise_and_point_to_local_tools() -> None:
    with pytest.raises(TypeError) as caught:
        robotlab.Robot(name="r", tools=[Calculator()])
    assert "Calculator" in str(caught.value)
    assert "local_tools" in str(caught.value)


def test_tools_given_as_names_are_accepted() -> None:
    robot = robotlab.Robot(name="r", tools=["a", "b"])
    assert robot.tools_config == ["a", "b"]


def test_keyword_arguments_beat_the_given_config() -> None:
    robot = robotlab.build(config=RunConfig(temperature=0.5), temperature=0.9)
    assert robot.config.temperature == 0.9


def test_config_model_is_used_when_no_model_keyword_is_given() -> None:
    robot = robotlab.build(config=RunConfig(model="m1"))
    assert robot.model == "m1"


def test_config_may_be_a_dict() -> None:
    assert robotlab.build(config={"max_tools": 5}).config.max_tools == 5


def test_unknown_keyword_is_refused() -> None:
    with pytest.raises(TypeError, match="tempreature"):
        robotlab.Robot(name="r", tempreature=0.1)


def test_model_provider_and_api_base_are_readable() -> None:
    robot = robotlab.build(model="llama3.2", provider="ollama", api_base="http://127.0.0.1:11434")
    assert (robot.model, robot.provider,
            robot.config.api_base) == ("llama3.2", "ollama", "http://127.0.0.1:11434")


def test_request_parameters_reach_the_model() -> None:
    llm = ScriptedLLM([{"content": "ok"}])
    robot = robotlab.build(model="llama3.2", provider="ollama", temperature=0.2, top_p=0.5,
                           stop=["END"], llm=llm)
    robot.run("hi")
    params = llm.requests[0].params
    assert params["model"] == "ollama/llama3.2"
    assert (params["temperature"], params["top_p"], params["stop"]) == (0.2, 0.5, ["END"])


def test_a_local_server_gets_a_placeholder_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = ScriptedLLM([{"content": "ok"}])
    robotlab.build(model="openai/my-model", api_base="http://127.0.0.1:8000/v1", llm=llm).run("hi")
    assert llm.requests[0].params["api_key"] == "not-needed"
    assert llm.requests[0].params["api_base"] == "http://127.0.0.1:8000/v1"


def test_default_model_comes_from_global_config() -> None:
    robotlab.configure(ruby_llm={"model": "from-config", "provider": None})
    assert robotlab.build().model == "from-config"


def test_inline_system_prompt_alone_is_the_system_message() -> None:
    robot = robotlab.build(system_prompt="Be brief.")
    assert robot.messages == [{"role": "system", "content": "Be brief."}]


def test_bare_robot_has_no_system_message() -> None:
    assert robotlab.build().messages == []


def test_runnable_protocol_for_a_robot() -> None:
    robot = robotlab.build(name="solo")
    assert robot.crew == [robot]
    assert robot.chief is robot
    assert robot.robot_count == 1
    assert robot.single() is True
    assert robot.network() is False


def test_update_reapplies_settings_and_returns_the_robot() -> None:
    llm = ScriptedLLM([{"content": "ok"}])
    robot = robotlab.build(system_prompt="old", model="a", llm=llm)
    assert robot.update(system_prompt="new", model="b", temperature=0.3) is robot
    robot.run("hi")
    assert llm.requests[0].system == "new"
    assert llm.requests[0].params["model"] == "b"
    assert llm.requests[0].params["temperature"] == 0.3


def test_to_dict_is_plain_data() -> None:
    robot = robotlab.build(name="d", local_tools=[Calculator], model="m", description="desc")
    data = robot.to_dict()
    assert data["name"] == "d"
    assert data["local_tools"] == ["calculator"]
    assert data["description"] == "desc"


def test_bus_is_stored_as_given() -> None:
    marker = object()
    assert robotlab.Robot(name="b", bus=marker).bus is marker


def test_with_methods_chain_and_take_effect() -> None:
    llm = ScriptedLLM([{"content": "ok"}])
    robot = robotlab.build(llm=llm)
    same = (robot.with_instructions("Be kind.").with_model("m2", provider="ollama")
            .with_temperature(0.4).with_params(top_k=3).with_tool(Calculator()))
    assert same is robot
    robot.run("hi", tools="inherit")
    request = llm.requests[0]
    assert request.system == "Be kind."
    assert (request.params["model"], request.params["temperature"],
            request.params["top_k"]) == ("ollama/m2", 0.4, 3)
    assert request.tool_names == ["calculator"]
    assert not hasattr(robot, "with_top_p")


def test_with_template_renders_the_new_template(template) -> None:  # type: ignore[no-untyped-def]
    template("greet", "Greet {{ who }}.", parameters={"who": None})
    assert robotlab.build().with_template("greet", who="Ann").system_prompt == "Greet Ann."
