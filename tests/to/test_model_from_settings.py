"""robot-to's model is the library's one record of which model, built from its flat settings
in one place: the file keys and ROBOT_LAB_TO_* variables the spec fixes stay as they are."""

from __future__ import annotations

import pytest

from robotlab import ConfigError
from robotlab.config.model_settings import ModelSettings
from robotlab.to import config
from robotlab.to.child.robot_factory import RobotModel, build_robot


def flat_settings(monkeypatch: pytest.MonkeyPatch, **overrides: object) -> config.RobotToSettings:
    monkeypatch.setenv("ROBOT_LAB_TO_PROVIDER", "ollama")
    monkeypatch.setenv("ROBOT_LAB_TO_MODEL", "llama3")
    monkeypatch.setenv("ROBOT_LAB_TO_CALL_TIMEOUT", "42")
    monkeypatch.setenv("ROBOT_LAB_TO_MAX_OUTPUT_TOKENS", "100")
    return config.load({"api_base": "http://127.0.0.1:9/v1", **overrides})


def test_the_flat_keys_make_the_record_the_iterations_robot_is_built_from(monkeypatch) -> None:
    settings = flat_settings(monkeypatch, stream=False, max_tool_rounds=7)
    assert settings.model_settings == ModelSettings(
        model="llama3", provider="ollama", api_base="http://127.0.0.1:9/v1", max_tokens=100,
        request_timeout=42)
    model = RobotModel.of(settings)
    assert model.qualified_id() == settings.model_settings.qualified_id() == "ollama/llama3"
    assert (model.stream, model.max_tool_rounds) == (False, 7)
    robot = build_robot("coder", "system", model, [])
    assert (robot.model, robot.provider, robot.llm.timeout) == ("llama3", "ollama", 42)


def test_a_call_timeout_of_zero_leaves_the_libraries_time_out(monkeypatch) -> None:
    settings = flat_settings(monkeypatch, call_timeout=0)
    assert settings.model_settings.request_timeout is None
    assert RobotModel.of(settings).request_timeout is None


def test_the_judge_uses_the_judge_model_on_the_runs_provider_unstreamed(monkeypatch) -> None:
    settings = flat_settings(monkeypatch, eval_judge_model="qwen3")
    judge = RobotModel.judging(settings)
    assert judge.required_id() == settings.judge_model_settings.required_id() == "ollama/qwen3"
    assert (judge.stream, judge.max_tokens, judge.request_timeout) == (False, 100, None)
    assert RobotModel.judging(flat_settings(monkeypatch)).required_id() == "ollama/llama3"


def test_a_record_without_a_model_has_no_id_to_call() -> None:
    with pytest.raises(ConfigError, match=r"RobotModel.model: not set"):
        RobotModel(provider="ollama").required_id()
