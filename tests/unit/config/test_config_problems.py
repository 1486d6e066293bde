"""A mistyped setting is one line per bad field: the field, its value, what it expects, and where
the value came from; never pydantic's dump."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import robotlab
from robotlab import ConfigError


@pytest.fixture(autouse=True)
def _fresh_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)  # ./config/robot_lab.yml is one of the layers
    yield
    monkeypatch.undo()
    robotlab.reload_config()


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config" / "robot_lab.yml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def refusal() -> str:
    with pytest.raises(ConfigError) as caught:
        robotlab.reload_config()
    return str(caught.value)


def test_each_bad_field_of_a_file_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "max_iterations: many\nstreaming_enabled: perhaps\n")
    assert refusal().splitlines() == [
        f"{path}: max_iterations: got 'many'; expected a whole number",
        f"{path}: streaming_enabled: got 'perhaps'; expected true or false",
    ]


def test_a_bad_model_setting_is_named_under_its_section(tmp_path: Path) -> None:
    path = write_config(tmp_path, "ruby_llm:\n  temperature: hot\n  max_tokens: lots\n")
    assert refusal().splitlines() == [
        f"{path}: ruby_llm.temperature: got 'hot'; expected a number",
        f"{path}: ruby_llm.max_tokens: got 'lots'; expected a whole number",
    ]


def test_a_bad_environment_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOT_LAB_MAX_ITERATIONS", "lots")
    assert refusal() == ("$ROBOT_LAB_MAX_ITERATIONS: max_iterations: got 'lots'; expected a whole "
                         "number")


def test_a_bad_value_set_in_code_is_refused_and_not_kept() -> None:
    with pytest.raises(ConfigError,
                       match=r"^configure\(\): max_iterations: got 'x'; expected a whole number$"):
        robotlab.configure(max_iterations="x")
    assert robotlab.config().max_iterations == 10
