"""Skill bundles (AgentSkills): a folder with a ``SKILL.md`` and, beside it, ``scripts/``.

``SKILL.md`` starts with YAML front matter between ``---`` fences. ``name`` and
``description`` are required; ``fs_read``, ``fs_write``, ``network``, ``timeout`` and
``trust`` (top level, or under ``capabilities:``) declare what the skill's scripts need. The
body is the skill's instructions. Each executable file directly under ``scripts/`` becomes a
``ScriptTool``.

``AgentSkillCatalog`` finds every bundle under a root (default ``~/.prompts/skills``), once,
lazily; bundles that do not load are skipped with a warning.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigError
from robotlab.skills.capabilities import Capabilities
from robotlab.skills.script_tool import ScriptTool

__all__ = ["DEFAULT_SKILLS_ROOT", "AgentSkill", "AgentSkillCatalog"]

log = logging.getLogger("robotlab.skills")

DEFAULT_SKILLS_ROOT = "~/.prompts/skills"
_CAPABILITY_KEYS = ("fs_read", "fs_write", "network", "timeout", "trust")


def _front_matter(path: Path) -> tuple[dict[str, Any], str]:
    import yaml

    text = path.read_text(encoding="utf-8")
    head, sep, body = text.partition("\n---")
    if not text.startswith("---") or not sep:
        raise ConfigError(f"{path}: no front matter; start the file with a --- fenced YAML block")
    try:
        meta = yaml.safe_load(head[3:]) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: bad front matter: {' '.join(str(exc).split())}") from exc
    if not isinstance(meta, dict):
        raise ConfigError(f"{path}: front matter must be a mapping")
    return meta, body.partition("\n")[2]


class AgentSkill:
    """One skill bundle, loaded from its ``SKILL.md``.

    Attributes:
        name, description: from the front matter.
        path: the bundle's directory.
        capabilities: what its scripts declare they need.
        instructions: the stripped body of ``SKILL.md``.
        meta: the whole front matter.

    Raises:
        ConfigError: no front matter, malformed YAML, or ``name``/``description`` missing.
    """

    def __init__(self, skill_md_path: str | os.PathLike[str], sandbox: Any = None) -> None:
        skill_md = Path(skill_md_path).expanduser().resolve()
        meta, body = _front_matter(skill_md)
        missing = [key for key in ("name", "description") if not meta.get(key)]
        if missing:
            raise ConfigError(f"{skill_md}: front matter needs {' and '.join(missing)}")
        declared = {**{k: meta[k] for k in _CAPABILITY_KEYS if k in meta}, **(meta.get("capabilities") or {})}
        self.name = str(meta["name"])
        self.description = str(meta["description"])
        self.path = skill_md.parent
        self.meta = meta
        self.capabilities = Capabilities.from_mapping(declared)
        self.instructions = body.strip()
        self._sandbox = sandbox

    @property
    def scripts(self) -> list[Path]:
        """The files directly under ``scripts/``, sorted."""
        folder = self.path / "scripts"
        return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []

    @property
    def script_tools(self) -> list[ScriptTool]:
        """A tool per executable script; each non-executable one is skipped with a warning."""
        tools = []
        for script in self.scripts:
            built = ScriptTool.from_path(script, self.capabilities, self.path, self._sandbox)
            if built is None:
                log.warning("skill %s: %s is not executable; no tool made (chmod +x it)", self.name, script.name)
            else:
                tools.append(built)
        return tools

    def __repr__(self) -> str:
        return f"<AgentSkill {self.name} at {self.path}>"


class AgentSkillCatalog:
    """Every skill bundle under ``root`` (``<root>/*/SKILL.md``), loaded once on first use."""

    def __init__(self, root: str | os.PathLike[str] = DEFAULT_SKILLS_ROOT, sandbox: Any = None) -> None:
        self.root = Path(root).expanduser()
        self._sandbox = sandbox
        self._lock = threading.Lock()
        self._skills: dict[str, AgentSkill] | None = None

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

    def reset(self) -> None:
        """Forget what was loaded; the next lookup scans ``root`` again."""
        with self._lock:
            self._skills = None
