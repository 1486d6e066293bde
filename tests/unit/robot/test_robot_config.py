"""RunConfig (spec 8), the global configuration cascade (spec 26) and async delegation (spec 24)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import robotlab
from robotlab import ConfigError, DelegationTimeout, RunConfig
from robotlab.testing import ScriptedLLM


def test_merge_returns_a_new_config_where_the_other_side_wins() -> None:
    left, right = RunConfig(model="a", temperature=0.5), RunConfig(temperature=0.9)
    merged = left.merge(right)
    assert (merged.model, merged.temperature) == ("a", 0.9)
    assert (left.temperature, right.model) == (0.5, None)


def test_unknown_fields_raise_and_none_is_unset() -> None:
    with pytest.raises(TypeError):
        RunConfig(foo=1)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="Unknown RunConfig field: foo"):
        RunConfig.of({"foo": 1})
    assert RunConfig(model=None).to_dict() == {}
    assert RunConfig(model="m").with_values(model=None).is_empty()


def test_json_dict_drops_callbacks() -> None:
    config = RunConfig(model="m", on_content=print, bus=object())
    assert config.to_json_dict() == {"model": "m"}
    assert config.has("bus") and not config.has("top_k")


def test_network_config_fills_llm_fields_the_robot_leaves_unset() -> None:
    llm = ScriptedLLM([{"content": "ok"}, {"content": "ok"}])
    robot = robotlab.build(temperature=0.1, llm=llm)
    robot.run("hi", network_config=RunConfig(model="net-model", temperature=0.7, max_tokens=9))
    params = llm.requests[0].params
    assert (params["model"], params["temperature"], params["max_tokens"]) == ("net-model", 0.1, 9)
    robotlab.build(model="own", llm=llm).run("hi", network_config=RunConfig(model="net-model"))
    assert llm.requests[1].params["model"] == "own"


def test_environment_variable_sets_the_default_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOT_LAB_RUBY_LLM__MODEL", "x")
    robotlab.reload_config()
    assert robotlab.build().model == "x"
    monkeypatch.setenv("ROBOT_LAB_LLM__MODEL", "y")
    robotlab.reload_config()
    assert robotlab.build().model == "y"


def test_file_layers_and_their_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "robot_lab").mkdir(parents=True)
    (xdg / "robot_lab" / "robot_lab.yml").write_text(
        "max_iterations: 3\nruby_llm:\n  model: user-model\ndefaults:\n  max_tool_iterations: 99\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "robot_lab.yml").write_text("max_iterations: 4\n")
    settings = robotlab.reload_config()
    assert settings.ruby_llm.model == "user-model"
    assert settings.max_iterations == 4
    assert settings.max_tool_iterations == 10
    monkeypatch.setenv("ROBOT_LAB_MAX_ITERATIONS", "5")
    assert robotlab.reload_config().max_iterations == 5
    assert robotlab.configure(max_iterations=6).max_iterations == 6


def test_environment_sections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOT_LAB_ENV", "production")
    settings = robotlab.reload_config()
    # production keeps the sized time-out of the base section and overrides the retries.
    assert (settings.ruby_llm.request_timeout, settings.ruby_llm.max_retries) == (None, 5)
    monkeypatch.setenv("ROBOT_LAB_ENV", "test")
    settings = robotlab.reload_config()
    assert (settings.ruby_llm.request_timeout, settings.ruby_llm.max_retries) == (30, 3)


def test_bundled_defaults() -> None:
    settings = robotlab.config()
    assert (settings.max_iterations, settings.streaming_enabled, settings.tools,
            settings.mcp) == (10, True, "none", "none")
    assert settings.sandbox.fs_read == ["."]
    assert settings.chat.with_temperature == 0.7


def test_a_robots_model_client_paces_retries_by_the_global_settings() -> None:
    assert (robotlab.build().llm.retry_interval, robotlab.build().llm.backoff_factor) == (0.5, 2)
    try:
        robotlab.configure(ruby_llm={"retry_interval": 0.2, "retry_backoff_factor": 3})
        llm = robotlab.build().llm
        assert (llm.retry_interval, llm.backoff_factor) == (0.2, 3)
    finally:
        robotlab.reload_config()


def test_bad_yaml_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "robot_lab.yml").write_text("a: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        robotlab.reload_config()
    (tmp_path / "config" / "robot_lab.yml").unlink()


def test_a_config_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "robot_lab.yml").write_bytes(b"chat:\n  model: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"robot_lab.yml: not UTF-8 text .* save it as UTF-8"):
        robotlab.reload_config()
    (tmp_path / "config" / "robot_lab.yml").unlink()


def slow_robot(release: threading.Event, name: str = "worker") -> robotlab.Robot:
    def wait(args: dict) -> str:
        release.wait(5)
        return "waited"

    tool = robotlab.Tool.create(name="wait", handler=wait)
    llm = ScriptedLLM([{"tool_calls": [{"name": "wait"}]}, {"content": "done"}])
    return robotlab.build(name=name, local_tools=[tool], llm=llm)


def test_async_delegation_returns_a_future_at_once() -> None:
    release = threading.Event()
    manager = robotlab.build(name="manager")
    future = manager.delegate(slow_robot(release), "work", async_=True, tools="inherit")
    assert future.resolved() is False
    started = time.monotonic()
    release.set()
    result = future.value(timeout=5)
    assert (result.reply, result.delegated_by) == ("done", "manager")
    assert result.duration is not None and result.duration <= time.monotonic() - started + 1


def test_async_delegation_times_out() -> None:
    release = threading.Event()
    future = robotlab.build(name="manager").delegate(slow_robot(release), "work", async_=True,
                                                     tools="inherit")
    with pytest.raises(DelegationTimeout, match="Delegation to 'worker' timed out after 0.1s"):
        future.value(timeout=0.1)
    release.set()
    assert future.value(timeout=5).reply == "done"


def test_async_delegation_error_is_raised_on_every_wait() -> None:
    failing = robotlab.build(name="worker",
                             llm=ScriptedLLM([{"error": {"status": 500, "message": "broken"}}]))
    future = robotlab.build(name="manager").delegate(failing, "work", async_=True)
    for _ in range(2):
        with pytest.raises(robotlab.InferenceError, match="broken"):
            future.value(timeout=5)


def test_chat_with_temperature_is_the_temperature_of_robots_that_set_none() -> None:
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}, {"content": "c"}])
    robotlab.build(llm=llm).run("hi")
    assert (llm.requests[0].params["temperature"],
            llm.requests[0].params["drop_params"]) == (0.7, True)
    robotlab.configure(chat={"with_temperature": 0.2})
    robotlab.build(llm=llm).run("hi")
    assert llm.requests[1].params["temperature"] == 0.2
    robotlab.build(llm=llm, temperature=0.9).run("hi")
    assert llm.requests[2].params["temperature"] == 0.9
    assert "drop_params" not in llm.requests[2].params


def test_the_model_fields_are_declared_once_and_shared() -> None:
    from robotlab.config.model_settings import ModelSettings
    from robotlab.config.settings import LLMSettings
    from robotlab.robotd.hosting import RobotSpec

    model_fields = set(ModelSettings.model_fields)
    assert model_fields <= set(RunConfig.model_fields)
    assert model_fields <= set(LLMSettings.model_fields)
    spec = RobotSpec(template="t", llm=ModelSettings(model="m", temperature=0.2, api_key="k"))
    again = RobotSpec.from_dict(spec.to_dict())
    assert again.llm == spec.llm and again.template == "t"
    assert RunConfig(model="m", api_key="k").as_model_settings().plain() == {"model": "m"}


def test_a_model_value_of_the_wrong_type_is_one_config_error_naming_the_field() -> None:
    from robotlab.config.model_settings import ModelSettings

    with pytest.raises(ConfigError, match=r"RunConfig.temperature: .*'hot'"):
        RunConfig(temperature="hot")
    with pytest.raises(ConfigError, match=r"ModelSettings.max_tokens"):
        ModelSettings(max_tokens="many")
    with pytest.raises(TypeError, match="unexpected keyword arguments: colour"):
        ModelSettings(colour="red")
