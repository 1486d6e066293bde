"""Skill bundles (AgentSkills): a folder with a ``SKILL.md`` and, beside it, ``scripts/``.

``SKILL.md`` starts with YAML front matter between ``---`` fences. ``name`` and
``description`` are required; ``fs_read``, ``fs_write``, ``network``, ``timeout`` and
``trust`` (top level, or under ``capabilities:``) declare what the skill's scripts need. The
body is the skill's instructions. Each executable file directly under ``scripts/`` becomes a
``ScriptTool``.

The catalog of every bundle under a root is ``robotlab.skills.catalog``; matching skills to a
message is ``robotlab.skills.matching``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigError
from robotlab.skills.capabilities import Capabilities
from robotlab.skills.script_tool import ScriptTool

__all__ = ["AgentSkill"]

log = logging.getLogger("robotlab.skills")

_CAPABILITY_KEYS = ("fs_read", "fs_write", "network", "timeout", "trust")


def _front_matter(path: Path) -> tuple[dict[str, Any], str]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it "
                          "as UTF-8") from exc
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
        capabilities = meta.get("capabilities") or {}
        if not isinstance(capabilities, dict):
            raise ConfigError(f"{skill_md}: capabilities must be a mapping (fs_read: [...], "
                              f"network: true, ...), not {type(capabilities).__name__}")
        declared = {**{k: meta[k] for k in _CAPABILITY_KEYS if k in meta}, **capabilities}
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
                log.warning("skill %s: %s is not executable; no tool made (chmod +x it)",
                            self.name, script.name)
            else:
                tools.append(built)
        return tools

    def __repr__(self) -> str:
        return f"<AgentSkill {self.name} at {self.path}>"
