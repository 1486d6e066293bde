"""robot-to settings and their cascade: bundled defaults < user file < ROBOT_LAB_TO_* < flags.

The user file is ``$XDG_CONFIG_HOME/robot_lab/to.yml`` (``~/.config/robot_lab/to.yml`` when
the variable is unset). Only keys of ``defaults.yml`` come from the file or the
environment; run-specific settings (limits, verify, evals) come from flags or ``run()``
keywords. This is the only module that reads the environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from robotlab.config.model_settings import (
    ROBOT_TO_DEFAULT_MODEL,
    ROBOT_TO_DEFAULT_PROVIDER,
    ModelSettings,
)
from robotlab.environment import variable
from robotlab.errors import ConfigError

DEFAULTS_FILE = Path(__file__).with_name("defaults.yml")


def user_config_path() -> Path:
    """``$XDG_CONFIG_HOME/robot_lab/to.yml``, or ``~/.config/robot_lab/to.yml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "robot_lab" / "to.yml"


def git_environment() -> dict[str, str]:
    """The environment of every git command: the caller's, with credential prompts off."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0"}


def _read_yaml(path: Path, section: str | None = None) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it "
                          "as UTF-8") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings")
    return dict(data.get(section) or {}) if section else data


class FileKeys(BaseModel):
    """The settings a file or an environment variable may set: the keys of ``defaults.yml``,
    declared once here (``defaults.yml`` carries the same defaults, for users to read)."""

    model_config = ConfigDict(extra="ignore")

    provider: str = ROBOT_TO_DEFAULT_PROVIDER
    model: str = ROBOT_TO_DEFAULT_MODEL
    api_base: str | None = None
    max_tool_rounds: int = 100
    max_consecutive_failures: int = 3
    max_retries: int = 2
    max_submit_nudges: int = 1
    max_verify_repairs: int = 2
    verify_timeout: float = 600
    iteration_timeout: float | None = None
    backoff_base: float = 60
    commit_format: Literal["default", "conventional"] = "default"
    run_dir: str = ".robot_lab_to"
    local_guards: bool = False
    edit_format: Literal["tools", "whole"] = "tools"
    stream: bool = True
    debug: bool = False
    decisions_enabled: bool = True
    decision_mode: Literal["wait", "exit"] = "wait"
    decision_wait_poll: float = 30
    decision_timeout: float | None = None
    preflight: bool = True
    preflight_timeout: float = 20
    max_output_tokens: int | None = 8192
    call_timeout: float = 300
    max_cost: float | None = None

    @property
    def model_settings(self) -> ModelSettings:
        """The iteration's robot's model as the library's one record of which model: the flat
        keys the spec fixes (``provider``, ``model``, ``api_base``, ``max_output_tokens`` as
        ``max_tokens``, ``call_timeout`` as ``request_timeout``, 0 meaning unset), so its
        provider-qualified id is made the way every robot's is."""
        return ModelSettings(model=self.model, provider=self.provider, api_base=self.api_base,
                             max_tokens=self.max_output_tokens,
                             request_timeout=self.call_timeout or None)


class FileSettings(BaseSettings, FileKeys):
    """The file keys read from ``ROBOT_LAB_TO_*`` variables over the YAML layers."""

    model_config = SettingsConfigDict(env_prefix="ROBOT_LAB_TO_", extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Environment first, then the YAML layers passed as init values (lower precedence)."""
        return env_settings, init_settings


class RobotToSettings(FileKeys):
    """Every robot-to setting, after the cascade: the file keys, then those only flags and
    ``run()`` keywords set. Field docs are in docs/robot-to/configuration.md. (The library's
    global settings are :class:`robotlab.config.settings.Settings`.)"""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)

    max_iterations: int | None = None
    max_tokens: int | None = None
    broker: str | None = None
    judge_robot: str | None = None
    crew: list[str] = []
    ask: str | None = None
    stop_when: str | None = None
    verify_command: str | None = None
    eval: Any = None
    eval_measure: str | None = None
    eval_target: float | None = None
    eval_spec: str | None = None
    eval_floor: str | None = None
    eval_judge_model: str | None = None
    stop_on_plateau: int | None = None
    require_improvement: bool = True
    protect_paths: list[str] = []
    write_guard: bool = True

    @property
    def judge_model_settings(self) -> ModelSettings:
        """The prose judge's model: ``eval_judge_model`` (else the run's model) on the run's
        provider and server with its output cap; its calls keep the library's time-out."""
        return ModelSettings(**{**self.model_settings.set_fields(),
                                "model": self.eval_judge_model or self.model,
                                "request_timeout": None})

    def persisted(self) -> dict[str, Any]:
        """The settings ``run.json`` keeps for ``--resume`` (an eval object is not kept)."""
        data = self.model_dump(exclude={"eval"})
        data["eval"] = self.eval if isinstance(self.eval, str) else None
        return data


Settings = RobotToSettings
"""The short name, for code that imports ``robotlab.to.config.Settings``."""


def load(overrides: dict[str, Any] | None = None,
         base: dict[str, Any] | None = None) -> RobotToSettings:
    """Apply the cascade. ``base`` (a resumed run's stored settings) sits just under ``overrides``.

    Unknown keys are ignored; a None override means "not given". Raises ConfigError.
    """
    layered = {**_read_yaml(DEFAULTS_FILE, "defaults"), **_read_yaml(user_config_path())}
    try:
        files = FileSettings(**layered).model_dump()
        given = {key: value for key, value in (overrides or {}).items() if value is not None}
        settings = RobotToSettings(**{**files, **(base or {}), **given})
    except ValidationError as exc:
        raise ConfigError(f"invalid robot-to settings: {exc}") from exc
    if settings.api_base is None and os.environ.get("OPENAI_API_BASE"):
        settings.api_base = os.environ["OPENAI_API_BASE"]
    if settings.broker is None and variable("ROBOT_LAB_BROKER"):
        settings.broker = variable("ROBOT_LAB_BROKER")  # the variable every bus client reads
    return settings
