"""How a robot's template, skills and inline ``system_prompt`` become one system message.

Bodies are joined with blank lines in the order: skills (nested first), the main template, the
inline prompt. Front matter supplies a base ``RunConfig`` (skills first, the main template
over them; the robot's own config wins over all) and extras (``robot_name``, ``description``,
``tools``, ``mcp``; last write wins). A template whose required parameters are missing
contributes no body until a run supplies them.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from robotlab.config.run_config import RunConfig
from robotlab.prompt.skills import Claim, expand_skills
from robotlab.prompt.templates import Template, load_template
from robotlab.tools.tool import Tool

__all__ = ["Composition", "SystemPrompt", "import_tools"]

log = logging.getLogger("robotlab.prompt.templates")
_EXTRAS = ("robot_name", "description", "tools", "mcp")


@dataclass
class Composition:
    """The result of composing: the text (None when empty), base config, and extras."""

    text: str | None
    config: RunConfig = field(default_factory=RunConfig)
    extras: dict[str, Any] = field(default_factory=dict)
    deferred: list[str] = field(default_factory=list)
    claimed: list[Any] = field(default_factory=list)
    """Skill ids the prompt's ``claim`` took (skill bundles), in order: no body here."""


def _import_one(spec: str) -> Any:
    module_name, _, attr = spec.replace(":", ".").rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


def import_tools(specs: list[Any]) -> list[Tool]:
    """Tools named in front matter as import paths (``package.module:Name``).

    Unknown ones are skipped.
    """
    tools: list[Tool] = []
    for spec in specs:
        try:
            found = _import_one(str(spec))
        except (ImportError, AttributeError, ValueError):
            log.warning("front-matter tool %r not found; skipped", spec)
            continue
        if isinstance(found, type) and issubclass(found, Tool):
            found = found()
        if isinstance(found, Tool):
            tools.append(found)
        else:
            log.warning("front-matter tool %r is not a robotlab Tool; skipped", spec)
    return tools


@dataclass
class SystemPrompt:
    """The pieces a robot's system message is built from."""

    template: str | None = None
    skills: list[str] = field(default_factory=list)
    context: dict[str, Any] | Callable[..., dict[str, Any]] = field(default_factory=dict)
    inline: str | None = None
    claim: Claim | None = None
    """Takes skill ids that are not templates (the robot's skill-bundle catalog)."""

    def templates(self, claimed: list[Any] | None = None) -> list[Template]:
        """Skill templates then the main template, in prompt order.

        Claimed ids go to ``claimed``.
        """
        main = load_template(self.template) if self.template else None
        front_skills = list(main.meta.get("skills") or []) if main else []
        found = expand_skills([*self.skills, *front_skills], self.template, self.claim, claimed)
        return [*found, main] if main else found

    def build_context(self) -> dict[str, Any]:
        """The build-time context (a callable context is called with ``network=None``)."""
        context = self.context(network=None) if callable(self.context) else self.context
        return dict(context or {})

    def compose(self, run_context: dict[str, Any] | None = None) -> Composition:
        """Render everything with the build context, overlaid by ``run_context``."""
        context = {**self.build_context(), **(run_context or {})}
        bodies: list[str] = []
        config = RunConfig()
        extras: dict[str, Any] = {}
        deferred: list[str] = []
        claimed: list[Any] = []
        for template in self.templates(claimed):
            config = config.merge(RunConfig.from_front_matter(template.meta))
            extras.update({k: template.meta[k] for k in _EXTRAS
                           if template.meta.get(k) is not None})
            missing = template.missing(context)
            if missing:
                deferred.extend(missing)
                continue
            body = template.render(context)
            if body:
                bodies.append(body)
        if self.inline:
            bodies.append(self.inline)
        return Composition("\n\n".join(bodies) or None, config, extras, deferred, claimed)

    def has_template(self) -> bool:
        """True when a main template is set (only then does a run re-render)."""
        return self.template is not None
