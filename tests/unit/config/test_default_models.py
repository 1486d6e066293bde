"""The default models are declared once, in ``robotlab/config/model_settings.py``: the library's and
robot-to's, which their specifications fix apart."""

from __future__ import annotations

from pathlib import Path

import yaml

from robotlab.config import cascade, model_settings
from robotlab.config.settings import Settings
from robotlab.to import config as robot_to_config


def test_the_bundled_defaults_file_names_the_library_s_declared_default_model() -> None:
    bundled = yaml.safe_load(Path(cascade.__file__).with_name("defaults.yml").read_text())
    assert (bundled["ruby_llm"]["provider"], bundled["ruby_llm"]["model"]) == (
        model_settings.LIBRARY_DEFAULT_PROVIDER, model_settings.LIBRARY_DEFAULT_MODEL)
    default = Settings.model_fields["ruby_llm"].default
    assert (default.provider, default.model) == (
        model_settings.LIBRARY_DEFAULT_PROVIDER, model_settings.LIBRARY_DEFAULT_MODEL)


def test_robot_to_s_file_keys_default_to_its_declared_model() -> None:
    fields = robot_to_config.FileKeys.model_fields
    assert (fields["provider"].default, fields["model"].default) == (
        model_settings.ROBOT_TO_DEFAULT_PROVIDER, model_settings.ROBOT_TO_DEFAULT_MODEL)
