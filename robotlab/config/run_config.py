"""``RunConfig``: the settings a robot runs with, and how layers of them merge.

Precedence for one robot, lowest first: template front matter, the ``config=`` given to the
robot, the robot's own keyword arguments. ``merge`` returns a new config in which the other
side's set (non-None) values win.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pydantic import ConfigDict, field_validator

from robotlab.config.model_settings import REQUEST_FIELDS, ModelSettings, validated
from robotlab.errors import ConfigError

__all__ = ["LLM_FIELDS", "RunConfig"]

LLM_FIELDS = ("model", *REQUEST_FIELDS)
"""Fields that shape the model request (and that template front matter may set)."""

_FRONT_MATTER_FIELDS = (*LLM_FIELDS, "provider", "api_base")
_NOT_JSON = ("on_tool_call", "on_tool_result", "on_content", "on_truncated", "bus", "auto_compact")


class RunConfig(ModelSettings):
    """Every setting a run can take; None means "not set here".

    The model fields (``model``, ``provider``, ``api_base``, ``api_key``, ``request_timeout``
    and the request parameters) come from
    :class:`~robotlab.config.model_settings.ModelSettings`. Tools: ``mcp``, ``tools``.
    Callbacks: ``on_tool_call``, ``on_tool_result``, ``on_content``, ``on_truncated`` (a reply
    the output-token limit cut, reported by the caller instead of the robot's WARNING).
    Infrastructure: ``bus``, ``enable_cache``, ``max_tool_rounds``, ``token_budget``,
    ``cost_budget``, ``max_concurrent_robots``, ``doom_loop_threshold``, ``auto_compact``,
    ``compact_threshold``, ``max_tools``. History: ``history_path`` (the file the
    conversation log is saved to after every step; see ``robotlab.history.log``).

    ``RunConfig(foo=1)`` raises ``TypeError`` (as any class does for an unknown keyword), a
    value of the wrong type ``ConfigError``; ``RunConfig.of({"foo": 1})`` raises
    ``ConfigError("Unknown RunConfig field: foo")``.

    Ruby's ``ractor_pool_size`` has no counterpart: robots are kept apart by OS processes
    (``Robot.spawn``, robotd), not by a pool of Ractors.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    mcp: Any = None
    tools: Any = None
    on_tool_call: Callable[[Any], Any] | None = None
    on_tool_result: Callable[[Any], Any] | None = None
    on_content: Callable[[str], Any] | None = None
    on_truncated: Callable[[int | None], Any] | None = None
    bus: Any = None
    enable_cache: bool | None = None
    max_tool_rounds: int | None = None
    token_budget: int | None = None
    cost_budget: float | None = None
    max_concurrent_robots: int | None = None
    doom_loop_threshold: int | None = None
    auto_compact: Any = None
    compact_threshold: float | None = None
    max_tools: int | None = None
    history_path: str | None = None

    def __init__(self, **values: Any) -> None:
        # Past ModelSettings.__init__ to pydantic's own, so errors name RunConfig, not
        # ModelSettings.
        validated(super(ModelSettings, self).__init__, "RunConfig", values)

    @field_validator("history_path", mode="before")
    @classmethod
    def _path_as_text(cls, value: Any) -> Any:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

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
        """Only the fields that are set (values as they are: callbacks and the bus included)."""
        return self.set_fields()

    def to_json_dict(self) -> dict[str, Any]:
        """``to_dict`` without callbacks, ``bus`` and ``auto_compact`` (plain data only)."""
        return {k: v for k, v in self.to_dict().items() if k not in _NOT_JSON}

    def merge(self, other: RunConfig | dict[str, Any] | None) -> RunConfig:
        """A new config: this one, overridden by the other side's set values."""
        return self.model_copy(update=RunConfig.of(other).to_dict())

    def with_values(self, **values: Any) -> RunConfig:
        """A copy with these fields changed; a None value unsets the field."""
        RunConfig.of(**{k: v for k, v in values.items() if v is not None})
        return self.model_copy(update=values)

    def is_empty(self) -> bool:
        """True when no field is set."""
        return not self.to_dict()

    def has(self, key: str) -> bool:
        """True when ``key`` is set."""
        return getattr(self, key, None) is not None

    def llm_params(self) -> dict[str, Any]:
        """The request parameters among the set fields (model excluded)."""
        return self.request_params()

    def as_model_settings(self) -> ModelSettings:
        """Just the model fields, as the one record of "which model" (``ModelSettings``)."""
        return ModelSettings(**self.set_fields(tuple(ModelSettings.model_fields)))


FIELD_NAMES = frozenset(RunConfig.model_fields)
