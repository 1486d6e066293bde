"""robot-to's settings are declared once: the file keys, and the flags-only keys beside them."""

from __future__ import annotations

import yaml

from robotlab.to import config


def test_defaults_yml_holds_exactly_the_file_keys_with_the_declared_defaults() -> None:
    bundled = yaml.safe_load(config.DEFAULTS_FILE.read_text())["defaults"]
    declared = config.FileKeys.model_fields
    assert set(bundled) == set(declared)
    assert {key: value for key, value in bundled.items() if declared[key].default != value} == {}


def test_the_environment_sets_a_file_key_and_cannot_set_a_flag_only_key(monkeypatch) -> None:
    monkeypatch.setenv("ROBOT_LAB_TO_MAX_RETRIES", "7")
    monkeypatch.setenv("ROBOT_LAB_TO_VERIFY_COMMAND", "rm -rf /")
    settings = config.load({})
    assert settings.max_retries == 7
    assert settings.verify_command is None
    assert set(config.FileKeys.model_fields) < set(config.RobotToSettings.model_fields)
