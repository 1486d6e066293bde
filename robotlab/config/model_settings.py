"""``ModelSettings``: which model a robot calls and how, declared once.

Robot keyword arguments, ``RunConfig`` (which extends it), the global ``ruby_llm`` section
(which extends it too), template front matter, spawn's fork request, robotd's robot spec and
robot-to's robots all take the model fields from here, so a new request parameter is added in
one place, and the provider-qualified id litellm is called with is made here (``qualify``).
``tests/test_model_record.py`` fails when another setting class declares its own ``model``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from robotlab.config.problems import describe
from robotlab.errors import ConfigError

__all__ = [
    "LIBRARY_DEFAULT_MODEL",
    "LIBRARY_DEFAULT_PROVIDER",
    "REQUEST_FIELDS",
    "ROBOT_TO_DEFAULT_MODEL",
    "ROBOT_TO_DEFAULT_PROVIDER",
    "ROUTE_FIELDS",
    "ModelSettings",
    "qualify",
    "validated",
]

# The default models, both here. Two, not one, because the specifications fix two: the library's
# global ``ruby_llm`` section defaults to Anthropic's Claude Sonnet 4 (robot_lab.md, "Configuration
# (global)"), robot-to's settings to OpenAI's gpt-5.5 (robot_to.md, "All settings"). robot-to
# names its model to every robot it builds, so the library's default never applies inside it.
LIBRARY_DEFAULT_MODEL = "claude-sonnet-4-20250514"
"""The model of robots that name none (the global ``ruby_llm.model``; the ``test`` environment's
section of ``robotlab/config/defaults.yml`` names a smaller one)."""
LIBRARY_DEFAULT_PROVIDER = "anthropic"
"""The provider of the library's default model (the global ``ruby_llm.provider``)."""
ROBOT_TO_DEFAULT_MODEL = "gpt-5.5"
"""robot-to's model when no flag, variable or file names one."""
ROBOT_TO_DEFAULT_PROVIDER = "openai"
"""robot-to's provider when no flag, variable or file names one."""

REQUEST_FIELDS = ("temperature", "top_p", "top_k", "max_tokens", "presence_penalty",
                  "frequency_penalty", "stop", "logit_bias")
"""The fields sent as request parameters of a model call."""

ROUTE_FIELDS = ("model", "provider", "api_base", "api_key")
"""The fields that say where a model call goes."""


def qualify(model: str, provider: str | None) -> str:
    """The litellm model id: ``provider/model`` unless the model already names its provider.

    The one place the provider-qualified id is made (``ModelSettings.qualified_id`` and
    ``robotlab.llm.model_id`` are this function).
    """
    if not provider or model.startswith(f"{provider}/"):
        return model
    return f"{provider}/{model}"


class ModelSettings(BaseModel):
    """The model a robot calls, where it is served, the request parameters and the time-out;
    None is "not set"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    """The model id; a provider prefix (``ollama/llama3``) may be part of it."""
    provider: str | None = None
    """A litellm provider name (``openai``, ``anthropic``, ``ollama``...)."""
    api_base: str | None = None
    """The server URL, for OpenAI-compatible or local servers."""
    api_key: str | None = Field(default=None, repr=False)
    """The key for this robot's calls (otherwise the provider's environment variable)."""
    request_timeout: float | None = None
    """Seconds one model call may take, its retries included; None: the global
    ``ruby_llm.request_timeout``, and when that is unset too, sized from the call's output cap
    and the token rate measured on its model (120 s until a call has been measured)."""
    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling mass."""
    top_k: int | None = None
    """Top-k sampling (providers that support it)."""
    max_tokens: int | None = None
    """The most output tokens one call may produce."""
    presence_penalty: float | None = None
    """Penalty for tokens already present."""
    frequency_penalty: float | None = None
    """Penalty by token frequency."""
    stop: str | list[str] | None = None
    """Stop sequence(s)."""
    logit_bias: dict[str, float] | None = None
    """Token id (as a string) to a bias added to its logit: -100 bans the token, 100 forces it
    (OpenAI-compatible servers: OpenAI, llama.cpp, vLLM; the ids are the model's own)."""

    def __init__(self, **values: Any) -> None:
        validated(super().__init__, type(self).__name__, values)

    def qualified_id(self) -> str | None:
        """The litellm id of ``model`` under ``provider`` (see :func:`qualify`); None without
        a model."""
        return qualify(self.model, self.provider) if self.model else None

    def required_id(self) -> str:
        """``qualified_id`` of a record that must name its model (robot-to's always do).

        Raises:
            ConfigError: no model is set.
        """
        if self.model is None:
            raise ConfigError(f"{type(self).__name__}.model: not set; name the model to call")
        return qualify(self.model, self.provider)

    def set_fields(self, names: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The set (non-None) fields, of ``names`` when given, as they are (no copies)."""
        keys = names if names is not None else tuple(type(self).model_fields)
        return {key: getattr(self, key) for key in keys if getattr(self, key) is not None}

    def request_params(self) -> dict[str, Any]:
        """The set request parameters (model and routing excluded)."""
        return self.set_fields(REQUEST_FIELDS)

    def plain(self) -> dict[str, Any]:
        """The set fields as plain data without the key (a fork request or ``robot.info``
        carries it)."""
        return {k: v for k, v in self.set_fields().items() if k != "api_key"}


def validated(init: Any, kind: str, values: dict[str, Any]) -> None:
    """Run a pydantic ``__init__``.

    An unknown keyword is Python's ``TypeError``, a bad value a ``ConfigError``.

    Raises:
        TypeError: a keyword that is not a field (a programming error, as for any class).
        ConfigError: a value of the wrong type, one line per bad field naming it, the value and
            what it expects; its ``__cause__`` is pydantic's error, so a caller that knows
            where the values came from (the configuration cascade) can say so.
    """
    try:
        init(**values)
    except ValidationError as exc:
        unknown = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden"]
        if unknown:
            raise TypeError(f"{kind}() got unexpected keyword arguments: "
                            f"{', '.join(unknown)}") from None
        raise ConfigError(describe(exc.errors(), prefix=(kind,))) from exc
