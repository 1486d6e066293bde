"""The typed shape of the global configuration (loaded by ``robotlab.config``)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, create_model, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from robotlab.config.model_settings import (
    LIBRARY_DEFAULT_MODEL,
    LIBRARY_DEFAULT_PROVIDER,
    REQUEST_FIELDS,
    ModelSettings,
)

__all__ = ["ChatParams", "ChatSettings", "LLMSettings", "SandboxSettings", "Settings"]


class LLMSettings(ModelSettings):
    """Defaults for every model call (the Ruby ``ruby_llm`` section): the fields of
    :class:`~robotlab.config.model_settings.ModelSettings`, whose values here are what a robot
    that sets none uses, plus the client's retries. Unknown keys are kept (provider-specific
    settings).

    The default model and provider are ``LIBRARY_DEFAULT_MODEL`` and
    ``LIBRARY_DEFAULT_PROVIDER`` (``robotlab/config/model_settings.py``, beside robot-to's), the
    ``ruby_llm`` default of :class:`Settings`; the bundled ``defaults.yml``, the lowest layer of
    the cascade, carries the same values for users to read, and a test holds the two equal."""

    model_config = ConfigDict(frozen=True, extra="allow")

    max_retries: int = 3
    """Retries of a transient failure (time-out, 429, 5xx, a dropped connection), made only
    inside the call's deadline; a permanent one (context overflow, refused key) is never retried."""
    retry_interval: float = 0.5
    """Seconds before the first retry. Ruby's default is 1; here retries happen inside the call's
    one deadline, so a shorter first wait leaves room for a retry before it."""
    retry_backoff_factor: float = 2
    """Each later wait is this many times the one before."""

    @field_validator("model")
    @classmethod
    def _names_a_model(cls, value: str | None) -> str | None:
        # Robots that name no model call this one: a null here would leave them none to call.
        if value is None:
            raise ValueError("text")
        return value


class SandboxSettings(BaseModel):
    """Ceilings for skill scripts (``robotlab.skills``; docs/skills.md)."""

    enabled: bool = False
    """Confine skill scripts; when nothing here can confine them, refuse to run them."""
    fs_read: list[str] = ["."]
    """Ceiling: paths any skill script may read (relative ones against the working directory)."""
    fs_write: list[str] = []
    """Ceiling: paths any skill script may write."""
    network: bool = False
    """Ceiling: whether any skill script may use the network."""
    timeout: float = 60
    """Ceiling: seconds a skill script may run before its process group is killed."""
    strategy: str = "auto"
    """``auto`` (bubblewrap, else Landlock), ``bubblewrap`` or ``landlock``."""


# The request fields of ModelSettings other than the temperature (which has its own key),
# declared once there.
_CHAT_FIELDS: dict[str, Any] = {
    name: (ModelSettings.model_fields[name].annotation, None)
    for name in REQUEST_FIELDS if name != "temperature"
}
ChatParams = create_model(
    "ChatParams",
    __config__=ConfigDict(extra="forbid"),
    __doc__=("Request parameters every robot uses unless its own settings give them "
             "(``chat.with_params``)."),
    **_CHAT_FIELDS,
)


class ChatSettings(BaseModel):
    """Chat defaults."""

    with_temperature: float | None = 0.7
    """The temperature of robots that set none."""
    # ChatParams is built at import time from ModelSettings' fields, so mypy sees a variable.
    with_params: ChatParams = ChatParams()  # type: ignore[valid-type]
    """The other request parameters of robots that set none."""


class _Layer(PydanticBaseSettingsSource):
    """A pre-merged dict of values (the YAML files, or the values set in code)."""

    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self.values = values

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)


class Settings(BaseSettings):
    """Global settings: every field can come from YAML, ``ROBOT_LAB_*`` or ``configure``."""

    model_config = SettingsConfigDict(env_prefix="ROBOT_LAB_", env_nested_delimiter="__",
                                      extra="ignore")
    _layers: ClassVar[tuple[dict[str, Any], dict[str, Any]]] = ({}, {})

    max_iterations: int | None = 10
    """The most robots one network run may start (its tasks); a network with more is refused
    when it runs. None: no bound. robot-to's iterations have their own ``max_iterations``."""
    max_tool_iterations: int | None = 10
    """The most tool calls in one run of a robot that sets no ``max_tool_rounds`` of its own;
    the next one raises ``ToolLoopError``. None: no bound."""
    streaming_enabled: bool = True
    """Stream model calls to a robot's ``on_content``; false: each call is made whole and
    ``on_content`` gets its text once."""
    template_path: str | list[str] | None = None
    """Where templates are found (``ROBOT_LAB_TEMPLATE_PATH``; a list or os.pathsep-joined)."""
    prompts_dir: str | None = None
    """Another template directory, searched first."""
    skills_path: str | None = None
    """Where skill bundles are found (``<skills_path>/*/SKILL.md``); default
    ``~/.prompts/skills``."""
    mcp: Any = "none"
    """Global MCP servers: the parent value for ``mcp="inherit"``."""
    tools: Any = "none"
    """Global tool names: the parent value for ``tools="inherit"``."""
    sandbox: SandboxSettings = SandboxSettings()
    chat: ChatSettings = ChatSettings()
    ruby_llm: LLMSettings = LLMSettings(model=LIBRARY_DEFAULT_MODEL,
                                        provider=LIBRARY_DEFAULT_PROVIDER)
    """LLM defaults (``ROBOT_LAB_RUBY_LLM__MODEL``...)."""
    llm: dict[str, Any] | None = None
    """The Python-friendly spelling of ``ruby_llm`` (``ROBOT_LAB_LLM__MODEL``); it wins."""

    @model_validator(mode="after")
    def _merge_llm_alias(self) -> Settings:
        if self.llm:
            self.ruby_llm = LLMSettings(**{**self.ruby_llm.model_dump(), **self.llm})
        return self

    @classmethod
    def from_layers(cls, files: dict[str, Any], code: dict[str, Any]) -> Settings:
        """Build from the merged YAML layers and the values set in code."""
        cls._layers = (files, code)
        return cls()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        files, code = cls._layers
        return (_Layer(settings_cls, code), env_settings, _Layer(settings_cls, files))
