"""``AgentSkillCatalog``: every skill bundle under a root, found once; and the default catalog.

The default root is ``~/.prompts/skills`` (the ``skills_path`` setting, or
``ROBOT_LAB_SKILLS_PATH``, names another). ``default_catalog()`` keeps one catalog per root,
so every robot that names skills shares one scan. Bundles that do not load are skipped with a
warning.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigError
from robotlab.memory.documents import Embedder
from robotlab.skills.bundle import AgentSkill
from robotlab.skills.matching import SIMILARITY_THRESHOLD, SkillIndex

__all__ = ["DEFAULT_SKILLS_ROOT", "AgentSkillCatalog", "default_catalog"]

log = logging.getLogger("robotlab.skills")

DEFAULT_SKILLS_ROOT = "~/.prompts/skills"
_defaults: dict[Path, AgentSkillCatalog] = {}
_defaults_lock = threading.Lock()


class AgentSkillCatalog:
    """Every skill bundle under ``root`` (``<root>/*/SKILL.md``), loaded once on first use."""

    def __init__(self, root: str | os.PathLike[str] = DEFAULT_SKILLS_ROOT,
                 sandbox: Any = None) -> None:
        self.root = Path(root).expanduser()
        self._sandbox = sandbox
        self._lock = threading.Lock()
        self._skills: dict[str, AgentSkill] | None = None
        self._index: SkillIndex | None = None

    def _load(self) -> dict[str, AgentSkill]:
        with self._lock:
            if self._skills is None:
                found: dict[str, AgentSkill] = {}
                for skill_md in sorted(self.root.glob("*/SKILL.md")):
                    try:
                        skill = AgentSkill(skill_md, self._sandbox)
                    except (ConfigError, OSError) as exc:
                        log.warning("skill bundle %s skipped: %s", skill_md.parent, exc)
                        continue
                    found[skill.name] = skill
                self._skills = found
            return self._skills

    def all(self) -> list[AgentSkill]:
        """Every loaded skill, by name."""
        return [self._load()[name] for name in sorted(self._load())]

    def find(self, name: str) -> AgentSkill | None:
        """The skill whose front-matter ``name`` is ``name``, or None."""
        return self._load().get(str(name))

    def matching(self, message: str, threshold: float = SIMILARITY_THRESHOLD,
                 embedder: Embedder | None = None) -> list[tuple[AgentSkill, float]]:
        """The catalog's skills whose descriptions score ``threshold`` or more against ``message``.

        Best first. The descriptions are embedded once (with ``embedder``, default the local
        one). An embedding failure is logged and matches nothing.
        """
        skills = self.all()
        if self._index is None or self._index.embedder is not embedder:
            self._index = SkillIndex(skills, embedder)
        return self._index.matching(message, threshold)

    def reset(self) -> None:
        """Forget what was loaded; the next lookup scans ``root`` again."""
        with self._lock:
            self._skills = None
            self._index = None


def default_catalog(root: str | os.PathLike[str] | None = None) -> AgentSkillCatalog:
    """The shared catalog of ``root``.

    ``root`` defaults to the ``skills_path`` setting, else ``~/.prompts/skills``.
    """
    if root is None:
        from robotlab.config.cascade import config

        root = config().skills_path or DEFAULT_SKILLS_ROOT
    key = Path(root).expanduser().resolve()
    with _defaults_lock:
        if key not in _defaults:
            _defaults[key] = AgentSkillCatalog(key)
        return _defaults[key]
