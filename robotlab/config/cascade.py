"""The global configuration cascade, read lazily on first use and never at import time.

Layers, lowest precedence first: the bundled ``robotlab/config/defaults.yml``; its section for
the environment (``ROBOT_LAB_ENV``: development, test or production); the user file
``$XDG_CONFIG_HOME/robot_lab/robot_lab.yml`` (default ``~/.config``); ``./config/robot_lab.yml``;
``ROBOT_LAB_*`` environment variables with ``__`` for nesting (``ROBOT_LAB_RUBY_LLM__MODEL=x``,
or the Python-friendly ``ROBOT_LAB_LLM__MODEL=x``); and ``configure(...)`` in code. A file may
hold environment sections too; a ``defaults:`` wrapper in a user file is ignored.

Every environment variable the project itself names starts with ``ROBOT_LAB_``, and code reads
it through :func:`robotlab.environment.variable` (``robotlab/environment.py``),
which until 0.2.0 also reads the old ``ROBOTLAB_*`` names of the bus's and tracing's variables,
with a warning. Two readers do not go through it: pydantic-settings, which reads the global
settings' ``ROBOT_LAB_*`` (``robotlab/config/settings.py``) and robot-to's ``ROBOT_LAB_TO_*``
(``robotlab/to/config.py``), and ``setup.py``, which reads ``ROBOT_LAB_COMPILE`` (and its old
name) where robotlab cannot be imported. docs/configuration.md lists every variable.

This module reads ``ROBOT_LAB_ENV`` and, of other programs' variables, ``XDG_CONFIG_HOME`` and
whether a provider's ``*_API_KEY`` is set. The other modules that read ``os.environ`` do so at
the edge that uses a setting, beside its own typed config (ours through ``variable``, other
programs' directly): the bus (``robotlab/bus/config.py``: the broker address and keys, and
``STATE_DIRECTORY`` or ``XDG_STATE_HOME`` for its state folder), tracing
(``robotlab/observability/tracing_settings.py``: ``OTEL_*`` and the traces file), systemd's
notify socket and watchdog (``robotlab/service/environment.py``), robot-to
(``robotlab/to/config.py``: the broker address, ``OPENAI_API_BASE``, ``XDG_CONFIG_HOME`` and
the environment git runs with) and the offline demo, which hands each member process its part
in ``ROBOT_LAB_DEMO_*`` variables (``robotlab/demo/network.py``). Whether the bus runs its
compiled build, ``ROBOT_LAB_PURE``, is read through ``variable`` in ``robotlab/bus/native.py``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from robotlab.environment import variable

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
    name = variable("ROBOT_LAB_ENV")
    return "development" if name is None else name


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
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it "
                          "as UTF-8") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    flat = {k: v for k, v in data.items()
            if k not in _ENVIRONMENTS and (bundled or k != "defaults")}
    section = data.get(env)
    return deep_merge(flat, section) if isinstance(section, dict) else flat


def _file_layers() -> dict[str, Any]:
    env = environment_name()
    merged: dict[str, Any] = {}
    for index, path in enumerate(config_files()):
        merged = deep_merge(merged, _file_layer(path, env, bundled=index == 0))
    return merged


def _load() -> Any:
    from pydantic import ValidationError

    from robotlab.config.problems import describe
    from robotlab.config.settings import Settings
    from robotlab.errors import ConfigError

    files, code = _file_layers(), dict(_code_layer)
    try:
        return Settings.from_layers(files, code)
    except ValidationError as exc:
        raise ConfigError(describe(exc.errors(), source_of)) from None
    except ConfigError as exc:  # the model section validates itself (ModelSettings), first
        cause = exc.__cause__
        if not isinstance(cause, ValidationError) or cause.title != "LLMSettings":
            raise
        # Its refusal stopped pydantic before the other fields: they are checked again without it.
        lines = [_problems_besides_the_model(files, code),
                 describe(cause.errors(), source_of, prefix=("ruby_llm",))]
        raise ConfigError("\n".join(line for line in lines if line)) from None


def _problems_besides_the_model(files: dict[str, Any], code: dict[str, Any]) -> str:
    from pydantic import ValidationError

    from robotlab.config.problems import describe
    from robotlab.config.settings import Settings
    from robotlab.errors import ConfigError

    def without(layer: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in layer.items() if key not in ("ruby_llm", "llm")}

    try:
        Settings.from_layers(without(files), without(code))
    except ValidationError as exc:
        return describe(exc.errors(), source_of)
    except ConfigError:
        pass  # the model section again, from a ROBOT_LAB_LLM__* variable: already told
    return ""


def source_of(path: tuple[str, ...]) -> str:
    """Where the value at ``path`` (``("ruby_llm", "temperature")``) came from: ``configure()``,
    a ``ROBOT_LAB_*`` variable or the file of highest precedence that sets it."""
    spellings = [path, ("llm", *path[1:])] if path[:1] == ("ruby_llm",) else [path]
    if any(_has(_code_layer, p) for p in spellings):
        return "configure()"
    for spelling in spellings:
        name = "ROBOT_LAB_" + "__".join(spelling).upper()
        if variable(name) is not None:
            return f"${name}"
    env = environment_name()
    for index, file in reversed(list(enumerate(config_files()))):
        if any(_has(_file_layer(file, env, bundled=index == 0), p) for p in spellings):
            return str(file)
    return "the settings"


def _has(layer: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    for part in path:
        if not isinstance(layer, Mapping) or part not in layer:
            return False
        layer = layer[part]
    return True


def config() -> Any:
    """The effective global settings (a ``robotlab.config.settings.Settings``), loaded on
    first use."""
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
        overrides = {**overrides,
                     "llm": deep_merge(overrides.get("llm") or {}, overrides["ruby_llm"])}
    with _lock:
        previous, _code_layer = _code_layer, deep_merge(_code_layer, overrides)
        try:
            _loaded = _load()
        except Exception:
            _code_layer = previous  # a refused value is not kept: the settings before still hold
            raise
        return _loaded


def reload_config() -> Any:
    """Drop values set in code and read every layer again."""
    global _loaded, _code_layer
    with _lock:
        _code_layer = {}
        _loaded = _load()
        return _loaded
