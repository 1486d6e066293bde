"""How a robot's settings become its system message, config, tools and request parameters.

Precedence, lowest first: template (and skill) front matter, the ``config=`` given to the
robot, the robot's keyword arguments; then, per run, a network config fills LLM fields the
robot leaves unset; the robot's default settings (``Robot(defaults=...)``, else the global
configuration) supply the model when nothing else does, ``chat.with_temperature`` when
nothing sets a temperature, and ``chat.with_params.*`` (top_p, top_k, max_tokens, the
penalties, stop) for each of those nothing sets.

A skill id that names a bundle in the skill catalog (``robotlab.skills``) is not a template:
it is kept in ``agent_skills`` and matched against each run's message (``matched_skills``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from robotlab.config.model_settings import REQUEST_FIELDS, qualify
from robotlab.config.run_config import RunConfig
from robotlab.llm import LLM, LiteLLM
from robotlab.prompt.system_prompt import Composition, SystemPrompt, import_tools
from robotlab.tools.selection import is_none_value
from robotlab.tools.tool import Tool

if TYPE_CHECKING:  # robotlab.skills is imported only by robots that name skills
    from robotlab.config.settings import Settings
    from robotlab.memory.documents import Embedder
    from robotlab.skills.bundle import AgentSkill
    from robotlab.skills.matching import Injection, SkillIndex

__all__ = ["RobotSetup", "validate_tool_names"]

log = logging.getLogger("robotlab.robot")
_PROMPT_KEYS = ("template", "context", "system_prompt", "skills")


def _find_bundle(skill_id: str) -> AgentSkill | None:
    from robotlab.skills.catalog import default_catalog

    return default_catalog().find(skill_id)


def validate_tool_names(tools: Any) -> None:
    """Reject tool objects in ``tools=`` (it takes names), pointing to ``local_tools=``.

    Raises:
        TypeError: an entry is not a string.
    """
    if not isinstance(tools, (list, tuple)):
        return
    bad = [entry for entry in tools if not isinstance(entry, str)]
    if bad:
        kinds = ", ".join(sorted({e.__name__ if isinstance(e, type) else type(e).__name__
                                  for e in bad}))
        raise TypeError(
            f"`tools=` expects tool names (str) to allow, but received {kinds}. "
            "To attach tool instances or classes, pass them as `local_tools=` instead."
        )


class RobotSetup:
    """The robot's composed prompt, effective config, attached tools, model and LLM."""

    def __init__(self, robot: Any, template: str | None, inline: str | None, context: Any,
                 local_tools: Sequence[Tool | type[Tool]], llm: LLM | None,
                 defaults: Settings | None = None) -> None:
        self.robot = robot
        self._defaults = defaults
        self.prompt = SystemPrompt(template, list(robot.skills or []), context, inline,
                                   claim=_find_bundle)
        self.agent_skills: list[AgentSkill] = []
        self.injection: Injection | None = None
        self._skill_index: SkillIndex | None = None
        self.local_tools: list[Tool] = [t() if isinstance(t, type) else t for t in local_tools]
        self._llm = llm
        self.own = RunConfig()
        self.config = RunConfig()
        self.system_text: str | None = None
        self.model = ""
        self.provider: str | None = None
        self._params: dict[str, Any] = {}

    def settings(self) -> Settings:
        """The settings the robot falls back to: those it was given (``Robot(defaults=...)``),
        else the process-wide ones, read at each call so ``configure()`` reaches a robot already
        built. The one place a robot reads the global configuration."""
        if self._defaults is not None:
            return self._defaults
        from robotlab.config.cascade import config

        settings: Settings = config()
        return settings

    @property
    def llm(self) -> LLM:
        """The robot's LLM (a ``LiteLLM`` with the robot's ``request_timeout``, else its default
        settings' one, and their retry pacing, by default)."""
        if self._llm is None:
            settings = self.settings().ruby_llm
            timeout = self.config.request_timeout or settings.request_timeout
            self._llm = LiteLLM(max_retries=settings.max_retries, timeout=timeout,
                                retry_interval=settings.retry_interval,
                                backoff_factor=settings.retry_backoff_factor)
        return self._llm

    def apply(self, own: RunConfig, *, named: bool) -> None:
        """Compose the prompt and settle the config (the robot's own config is ``own``)."""
        self.own = own
        if self.prompt.template or self.prompt.skills:
            composition = self.prompt.compose()
        else:
            composition = Composition(self.prompt.inline)
        base = self._apply_extras(composition, named)
        self.config = base.merge(own)
        self.robot.config = self.config
        self.system_text = composition.text
        if [s.name for s in composition.claimed] != [s.name for s in self.agent_skills]:
            self.agent_skills, self._skill_index = list(composition.claimed), None
        self._settle_model()

    def _apply_extras(self, composition: Composition, named: bool) -> RunConfig:
        extras = composition.extras
        if "robot_name" in extras and not named:
            self.robot.name = str(extras["robot_name"])
        if self.robot.description is None and "description" in extras:
            self.robot.description = str(extras["description"])
        if not self.local_tools and extras.get("tools"):
            self.local_tools = import_tools(list(extras["tools"]))
        base = composition.config
        if "mcp" in extras and is_none_value(self.own.mcp):
            base = base.with_values(mcp=extras["mcp"])
        return base

    def _settle_model(self) -> None:
        config = self.config
        self.model = config.model or ""
        self.provider = config.provider
        settings: Any = self.settings()  # Any: chat.with_params is a model made at run time
        if not self.model:
            self.model = settings.ruby_llm.model or ""
            self.provider = self.provider or settings.ruby_llm.provider
        api_base = config.api_base or settings.ruby_llm.api_base
        self._params = self._build_params(config, api_base)
        if config.temperature is None and settings.chat.with_temperature is not None:
            # The global default is a preference, not a demand: a model that takes no
            # temperature (OpenAI's reasoning models) gets the request without it.
            self._params.update(temperature=settings.chat.with_temperature, drop_params=True)
        defaults = {k: v for k, v in settings.chat.with_params.model_dump().items()
                    if v is not None and getattr(config, k) is None}
        self._params.update(defaults)
        # Preferences too, like the temperature; but every provider takes max_tokens (litellm maps
        # it), and drop_params would also drop a robot's own settings silently.
        if set(defaults) - {"max_tokens"}:
            self._params["drop_params"] = True
        _uncapped(self._params)

    def _build_params(self, config: RunConfig, api_base: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {"model": qualify(self.model, self.provider),
                                  **config.llm_params()}
        if api_base:
            params["api_base"] = api_base
        api_key = config.api_key
        if api_key is None and api_base:
            from robotlab.config.cascade import dummy_api_key_needed

            # OpenAI-compatible local servers ignore the key, but the client refuses to send
            # a request without one.
            api_key = "not-needed" if dummy_api_key_needed(self.provider) else None
        if api_key:
            params["api_key"] = api_key
        return params

    def params(self, network_config: RunConfig | None = None) -> dict[str, Any]:
        """Request parameters; a network config fills the LLM fields the robot leaves unset."""
        if network_config is None:
            return self._params
        offered = network_config.set_fields((*REQUEST_FIELDS, "api_base", "api_key"))
        inherited = {k: v for k, v in offered.items() if getattr(self.config, k) is None}
        params = {**self._params, **inherited}
        if self.own.model is None and self.config.model is None and network_config.model:
            params["model"] = qualify(network_config.model,
                                      network_config.provider or self.config.provider)
        return _uncapped(params)

    @property
    def run_system_text(self) -> str | None:
        """The system message of the run under way.

        Matched skills' instructions, then ``system_text``.
        """
        return self.injection.system_text(self.system_text) if self.injection else self.system_text

    def system_messages(self) -> list[dict[str, Any]]:
        """The run's system message as a one-element list (empty when there is none)."""
        text = self.run_system_text
        return [{"role": "system", "content": text}] if text else []

    @contextmanager
    def matched_skills(self, message: str | None,
                       embedder: Embedder | None) -> Iterator[list[Tool]]:
        """Match the skill bundles to ``message`` for one run; yields their script tools.

        Inside, the matched skills' instructions lead the system message; leaving drops them.
        """
        if not self.agent_skills:
            yield []
            return
        if self._skill_index is None or self._skill_index.embedder is not embedder:
            from robotlab.skills.matching import SkillIndex

            self._skill_index = SkillIndex(self.agent_skills, embedder)
        self.injection = injection = self._skill_index.inject(message)
        if injection.matched:
            log.info("robot %s: skills matched: %s", self.robot.name,
                     ", ".join(f"{skill.name} ({score:.2f})" for skill, score in injection.matched))
        try:
            yield list(injection.tools)
        finally:
            self.injection = None

    def rerender(self, run_context: dict[str, Any]) -> None:
        """Render the template again with the run's context over the build context."""
        self.system_text = self.prompt.compose(run_context).text

    def update(self, changes: dict[str, Any]) -> None:
        """Apply ``Robot.update`` changes and settle everything again."""
        for key in _PROMPT_KEYS:
            if key in changes:
                value = changes.pop(key)
                if key == "system_prompt":
                    self.prompt.inline = value
                elif key == "skills":
                    self.prompt.skills = list(value or [])
                else:
                    setattr(self.prompt, key, value if key != "context" else value or {})
        if "local_tools" in changes:
            self.local_tools = [t() if isinstance(t, type) else t
                                for t in changes.pop("local_tools")]
        if "llm" in changes:
            self._llm = changes.pop("llm")
        self.apply(self.own.merge(RunConfig.of(changes)), named=self.robot.name != "robot")


def _uncapped(params: dict[str, Any]) -> dict[str, Any]:
    """``max_tokens`` 0 means "no cap": the request goes without it, so the provider's own limit
    applies (a robot can opt out of the global default ``chat.with_params.max_tokens`` this
    way)."""
    if params.get("max_tokens") == 0:
        del params["max_tokens"]
    return params
