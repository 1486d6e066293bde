"""The global configuration cascade, read lazily on first use and never at import time.

Layers, lowest precedence first: the bundled ``robotlab/defaults.yml``; its section for the
environment (``ROBOT_LAB_ENV``: development, test or production); the user file
``$XDG_CONFIG_HOME/robot_lab/robot_lab.yml`` (default ``~/.config``); ``./config/robot_lab.yml``;
``ROBOT_LAB_*`` environment variables with ``__`` for nesting (``ROBOT_LAB_RUBY_LLM__MODEL=x``,
or the Python-friendly ``ROBOT_LAB_LLM__MODEL=x``); and ``configure(...)`` in code. A file may
hold environment sections too; a ``defaults:`` wrapper in a user file is ignored.

This is the only module that reads ``os.environ``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "config",
    "config_files",
    "configure",
    "dummy_api_key_needed",
    "environment_name",
    "prepare_litellm_environment",
    "reload_config",
]

_ENVIRONMENTS = ("development", "test", "production")
_lock = threading.Lock()
_loaded: Any = None
_code_layer: dict[str, Any] = {}


def prepare_litellm_environment() -> None:
    """Make litellm read its price table from the installed package, never the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def dummy_api_key_needed(provider: str | None) -> bool:
    """True when no ``<PROVIDER>_API_KEY`` is set, so a local server needs a placeholder key."""
    name = (provider or "openai").upper().replace("-", "_")
    return not os.environ.get(f"{name}_API_KEY")


def environment_name() -> str:
    """The configuration environment: ``ROBOT_LAB_ENV``, default ``development``."""
    return os.environ.get("ROBOT_LAB_ENV", "development")


def config_files() -> list[Path]:
    """The YAML layers, lowest precedence first (files that do not exist are skipped when read)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [
        Path(__file__).with_name("defaults.yml"),
        Path(xdg) / "robot_lab" / "robot_lab.yml",
        Path.cwd() / "config" / "robot_lab.yml",
    ]


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base``: nested dicts merge, anything else (lists too) is replaced."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _file_layer(path: Path, env: str, *, bundled: bool) -> dict[str, Any]:
    import yaml

    from robotlab.errors import ConfigError

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError:
        return {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    flat = {k: v for k, v in data.items() if k not in _ENVIRONMENTS and (bundled or k != "defaults")}
    section = data.get(env)
    return deep_merge(flat, section) if isinstance(section, dict) else flat


def _file_layers() -> dict[str, Any]:
    env = environment_name()
    merged: dict[str, Any] = {}
    for index, path in enumerate(config_files()):
        merged = deep_merge(merged, _file_layer(path, env, bundled=index == 0))
    return merged


def _load() -> Any:
    from robotlab.config.settings import Settings

    return Settings.from_layers(_file_layers(), dict(_code_layer))


def config() -> Any:
    """The effective global settings (a ``robotlab.config.settings.Settings``), loaded on first use."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load()
        return _loaded


def configure(**overrides: Any) -> Any:
    """Set values in code (the highest layer), nested dicts merged; returns the new settings.

    Example: ``robotlab.configure(ruby_llm={"model": "gpt-4o-mini"}, template_path="prompts")``.
    """
    global _loaded, _code_layer
    if "ruby_llm" in overrides:
        # ``llm`` (the alias) wins over ``ruby_llm`` inside a layer; mirror code values into it
        # so an environment ``ROBOT_LAB_LLM__*`` cannot beat what code sets.
        overrides = {**overrides, "llm": deep_merge(overrides.get("llm") or {}, overrides["ruby_llm"])}
    with _lock:
        _code_layer = deep_merge(_code_layer, overrides)
        _loaded = _load()
        return _loaded


def reload_config() -> Any:
    """Drop values set in code and read every layer again."""
    global _loaded, _code_layer
    with _lock:
        _code_layer = {}
        _loaded = _load()
        return _loaded
