"""ModelSettings, the one record of which model a robot calls: its provider-qualified id, its
time-out, and the library's one default model (docs/configuration.md#which-model-one-record)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import robotlab
from robotlab import ConfigError
from robotlab.config.model_settings import ModelSettings, qualify
from robotlab.testing import ScriptedLLM


def test_the_provider_qualified_id_is_made_in_one_place() -> None:
    from robotlab.llm import model_id

    assert ModelSettings(model="llama3", provider="ollama").qualified_id() == "ollama/llama3"
    assert ModelSettings(model="ollama/llama3", provider="ollama").qualified_id() == "ollama/llama3"
    assert ModelSettings(model="gpt-4o").qualified_id() == "gpt-4o"
    assert ModelSettings(provider="openai").qualified_id() is None
    assert model_id is qualify


def test_a_robot_sends_its_provider_qualified_model() -> None:
    llm = ScriptedLLM([{"content": "ok"}])
    robotlab.build(model="llama3", provider="ollama", llm=llm).run("hi")
    assert llm.requests[0].params["model"] == "ollama/llama3"


def test_a_robots_request_timeout_bounds_its_calls_else_the_global_one() -> None:
    assert robotlab.build(request_timeout=7).llm.timeout == 7
    robotlab.configure(ruby_llm={"request_timeout": 20})
    assert robotlab.build().llm.timeout == 20
    assert robotlab.build(request_timeout=3).llm.timeout == 3


def test_a_spawned_robots_time_out_travels_in_its_model_settings() -> None:
    from robotlab.robotd.hosting import RobotSpec

    spec = RobotSpec(llm=ModelSettings(model="m", request_timeout=5))
    assert RobotSpec.from_dict(spec.to_dict()).llm.request_timeout == 5


def test_a_robot_spec_refuses_model_fields_outside_its_model_settings() -> None:
    from robotlab.robotd.hosting import RobotSpec

    with pytest.raises(TypeError, match=r"\['model', 'temperature'\]: give them in llm"):
        RobotSpec.from_dict({"llm": {"model": "m"},
                             "settings": {"temperature": 0.1, "model": "other", "token_budget": 9}})
    assert RobotSpec(settings={"token_budget": 9}).settings == {"token_budget": 9}


def test_the_library_default_model_is_the_bundled_defaults_file() -> None:
    from robotlab.config import cascade

    defaults = yaml.safe_load(Path(cascade.__file__).with_name("defaults.yml").read_text())
    robot = robotlab.build()
    bundled = defaults["ruby_llm"]
    assert (robot.model, robot.provider) == (bundled["model"], bundled["provider"])
    assert (robot.model, robot.provider) == ("claude-sonnet-4-20250514", "anthropic")


def test_the_default_model_cannot_be_set_to_none() -> None:
    with pytest.raises(ConfigError, match=r"ruby_llm.model: got None; expected text"):
        robotlab.configure(ruby_llm={"model": None})
    assert robotlab.build().model == "claude-sonnet-4-20250514"
