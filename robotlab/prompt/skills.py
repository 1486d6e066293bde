"""Template skills: templates composed into one system prompt, nested depth-first.

A skill's own front-matter ``skills:`` come before it; a skill already included (a cycle, or
a repeat) is skipped with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from robotlab.prompt.templates import Template, load_template

__all__ = ["expand_skills"]

log = logging.getLogger("robotlab.prompt.skills")


def _expand(ids: Iterable[str], visited: set[str], out: list[Template]) -> None:
    for skill_id in ids:
        skill_id = str(skill_id)
        if skill_id in visited:
            log.warning("skill %r is already included (cycle or repeat); skipped", skill_id)
            continue
        visited.add(skill_id)
        template = load_template(skill_id)
        _expand(template.meta.get("skills") or [], visited, out)
        out.append(template)


def expand_skills(skills: Iterable[str], main: str | None = None) -> list[Template]:
    """The skill templates in prompt order: nested skills first, each skill once, ``main`` excluded."""
    out: list[Template] = []
    _expand(skills, {main} if main else set(), out)
    return out
