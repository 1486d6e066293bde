"""Matching skill bundles to a run's message, and what a matched skill adds to that run (spec 17).

A robot's skills are embedded once, by description, in a ``DocumentStore``. Each run's
message is searched against them; every skill scoring ``SIMILARITY_THRESHOLD`` (0.70) or more
is *injected* into that run only: its instructions are prepended to the system message (best
match first, blank lines between) and its script tools are appended to the robot's local
tools. An embedding failure is logged and injects nothing: the run goes on without skills.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from robotlab.errors import RobotlabError
from robotlab.memory.documents import DocumentStore, Embedder
from robotlab.skills.bundle import AgentSkill
from robotlab.tools.tool import Tool

__all__ = ["SIMILARITY_THRESHOLD", "Injection", "SkillIndex"]

log = logging.getLogger("robotlab.skills")

SIMILARITY_THRESHOLD = 0.70
"""The score a skill's description needs against a message to match it."""


@dataclass(frozen=True)
class Injection:
    """What the matched skills add to one run: instructions first in the system message, tools."""

    matched: tuple[tuple[AgentSkill, float], ...] = ()
    tools: tuple[Tool, ...] = ()

    @property
    def names(self) -> list[str]:
        """The matched skills' names, best match first."""
        return [skill.name for skill, _ in self.matched]

    def system_text(self, base: str | None) -> str | None:
        """``base`` with the matched skills' instructions prepended.

        ``base`` alone when none matched.
        """
        parts = [skill.instructions for skill, _ in self.matched if skill.instructions]
        return "\n\n".join([*parts, base] if base else parts) or None


@dataclass
class SkillIndex:
    """A fixed set of skills, their descriptions embedded on first use.

    Args:
        skills: the skills to match among.
        embedder: what embeds the descriptions and the messages (default ``LocalEmbedder``).
    """

    skills: Sequence[AgentSkill]
    embedder: Embedder | None = None
    _store: DocumentStore | None = field(default=None, init=False, repr=False)
    _tools: dict[str, list[Tool]] = field(default_factory=dict, init=False, repr=False)

    def _index(self) -> DocumentStore:
        if self._store is None:
            store = DocumentStore(self.embedder)
            for skill in self.skills:
                store.store(skill.name, skill.description)
            self._store = store
        return self._store

    def matching(self, message: str,
                 threshold: float = SIMILARITY_THRESHOLD) -> list[tuple[AgentSkill, float]]:
        """The skills whose descriptions score ``threshold`` or more against ``message``.

        Best first.

        An embedding failure is logged and matches nothing.
        """
        if not self.skills or not (message or "").strip():
            return []
        by_name = {skill.name: skill for skill in self.skills}
        try:
            hits = self._index().search(message, limit=len(by_name))
        except RobotlabError as exc:
            log.warning("skill matching failed, no skills matched: %s", exc)
            return []
        return [(by_name[hit["key"]], hit["score"]) for hit in hits if hit["score"] >= threshold]

    def inject(self, message: str | None, threshold: float = SIMILARITY_THRESHOLD) -> Injection:
        """What the skills matching ``message`` add to its run (nothing when none match)."""
        matched = self.matching(message or "", threshold)
        tools = [tool for skill, _ in matched for tool in self._script_tools(skill)]
        return Injection(tuple(matched), tuple(tools))

    def _script_tools(self, skill: AgentSkill) -> list[Tool]:
        # Made once per skill: a non-executable script warns once, not on every run.
        if skill.name not in self._tools:
            self._tools[skill.name] = list(skill.script_tools)
        return self._tools[skill.name]
