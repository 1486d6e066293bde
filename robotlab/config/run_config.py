"""``RunConfig``: the settings a robot runs with, and how layers of them merge.

Precedence for one robot, lowest first: template front matter, the ``config=`` given to the
robot, the robot's own keyword arguments. ``merge`` returns a new config in which the other
side's set (non-None) values win.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from robotlab.errors import ConfigError

__all__ = ["LLM_FIELDS", "RunConfig"]

LLM_FIELDS = (
    "model",
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "presence_penalty",
    "frequency_penalty",
    "stop",
)
"""Fields that shape the model request (and that template front matter may set)."""

_FRONT_MATTER_FIELDS = (*LLM_FIELDS, "provider", "api_base")
_NOT_JSON = ("on_tool_call", "on_tool_result", "on_content", "bus", "auto_compact")


@dataclass(frozen=True)
class RunConfig:
    """Every setting a run can take; None means "not set here".

    LLM: ``model``, ``temperature``, ``top_p``, ``top_k``, ``max_tokens``,
    ``presence_penalty``, ``frequency_penalty``, ``stop``, plus ``provider``, ``api_base`` and
    ``api_key`` to point any provider at a server of your choice. Tools: ``mcp``, ``tools``.
    Callbacks: ``on_tool_call``, ``on_tool_result``, ``on_content``. Infrastructure: ``bus``,
    ``enable_cache``, ``max_tool_rounds``, ``token_budget``, ``cost_budget``,
    ``ractor_pool_size``, ``max_concurrent_robots``, ``doom_loop_threshold``, ``auto_compact``,
    ``compact_threshold``, ``max_tools``. History: ``history_path`` (the file the
    conversation log is saved to after every step; see ``robotlab.history.log``).

    ``RunConfig(foo=1)`` raises ``TypeError`` (Python's own unknown-keyword error);
    ``RunConfig.of({"foo": 1})`` raises ``ConfigError("Unknown RunConfig field: foo")``.
    """

    model: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop: str | list[str] | None = None
    provider: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    mcp: Any = None
    tools: Any = None
    on_tool_call: Callable[[Any], Any] | None = None
    on_tool_result: Callable[[Any], Any] | None = None
    on_content: Callable[[str], Any] | None = None
    bus: Any = None
    enable_cache: bool | None = None
    max_tool_rounds: int | None = None
    token_budget: int | None = None
    cost_budget: float | None = None
    ractor_pool_size: int | None = None
    max_concurrent_robots: int | None = None
    doom_loop_threshold: int | None = None
    auto_compact: Any = None
    compact_threshold: float | None = None
    max_tools: int | None = None
    history_path: str | None = None

    def __post_init__(self) -> None:
        if self.history_path is not None and not isinstance(self.history_path, str):
            object.__setattr__(self, "history_path", os.fspath(self.history_path))

    @classmethod
    def of(cls, values: RunConfig | dict[str, Any] | None = None, **more: Any) -> RunConfig:
        """Build from a RunConfig, a dict, keyword arguments, or nothing.

        Raises:
            ConfigError: a key is not a RunConfig field.
        """
        if isinstance(values, RunConfig):
            base = values.to_dict()
        else:
            base = dict(values or {})
        base.update(more)
        unknown = [key for key in base if key not in FIELD_NAMES]
        if unknown:
            raise ConfigError(f"Unknown RunConfig field: {', '.join(map(str, unknown))}")
        return cls(**base)

    @classmethod
    def from_front_matter(cls, meta: dict[str, Any]) -> RunConfig:
        """The LLM fields plus ``provider`` and ``api_base`` of a template's front matter.

        Front-matter ``tools`` and ``mcp`` are not config: they attach tools and servers
        (see ``robotlab.prompt.system_prompt``).
        """
        return cls(**{key: meta[key] for key in _FRONT_MATTER_FIELDS if meta.get(key) is not None})

    def to_dict(self) -> dict[str, Any]:
        """Only the fields that are set."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def to_json_dict(self) -> dict[str, Any]:
        """``to_dict`` without callbacks, ``bus`` and ``auto_compact`` (plain data only)."""
        return {k: v for k, v in self.to_dict().items() if k not in _NOT_JSON}

    def merge(self, other: RunConfig | dict[str, Any] | None) -> RunConfig:
        """A new config: this one, overridden by the other side's set values."""
        return dataclasses.replace(self, **RunConfig.of(other).to_dict())

    def with_values(self, **values: Any) -> RunConfig:
        """A copy with these fields changed; a None value unsets the field."""
        RunConfig.of(**{k: v for k, v in values.items() if v is not None})
        return dataclasses.replace(self, **values)

    def is_empty(self) -> bool:
        """True when no field is set."""
        return not self.to_dict()

    def has(self, key: str) -> bool:
        """True when ``key`` is set."""
        return getattr(self, key, None) is not None

    def llm_params(self) -> dict[str, Any]:
        """The request parameters among the set fields (model excluded)."""
        return {key: getattr(self, key) for key in LLM_FIELDS[1:] if getattr(self, key) is not None}


FIELD_NAMES = frozenset(f.name for f in fields(RunConfig))
