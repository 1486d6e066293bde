"""Template skills: templates composed into one system prompt, nested depth-first.

A skill's own front-matter ``skills:`` come before it; a skill already included (a cycle, or
a repeat) is skipped with a warning. A ``claim`` callable can take ids away from the templates:
the robot passes its skill-bundle catalog, so an id naming a bundle becomes a run-time matched
skill (``robotlab.skills``) instead of a template.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from robotlab.prompt.templates import Template, load_template

__all__ = ["expand_skills"]

log = logging.getLogger("robotlab.prompt.skills")


Claim = Callable[[str], Any]
"""Returns what an id names instead of a template, or None to leave it a template."""


def _expand(ids: Iterable[str], visited: set[str], out: list[Template], claim: Claim | None,
            claimed: list[Any]) -> None:
    for skill_id in ids:
        skill_id = str(skill_id)
        if skill_id in visited:
            log.warning("skill %r is already included (cycle or repeat); skipped", skill_id)
            continue
        visited.add(skill_id)
        other = claim(skill_id) if claim is not None else None
        if other is not None:
            claimed.append(other)
            continue
        template = load_template(skill_id)
        _expand(template.meta.get("skills") or [], visited, out, claim, claimed)
        out.append(template)


def expand_skills(skills: Iterable[str], main: str | None = None, claim: Claim | None = None,
                  claimed: list[Any] | None = None) -> list[Template]:
    """The skill templates in prompt order: nested skills first, each skill once, ``main`` excluded.

    Ids that ``claim`` answers for are not templates: what it returns is appended to ``claimed``.
    """
    out: list[Template] = []
    _expand(skills, {main} if main else set(), out, claim, claimed if claimed is not None else [])
    return out
