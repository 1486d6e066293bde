"""Skill bundles (AgentSkills): SKILL.md instructions and the scripts beside it.

The scripts become sandboxed tools.
"""

from __future__ import annotations

from robotlab.skills.bundle import AgentSkill
from robotlab.skills.capabilities import Capabilities
from robotlab.skills.catalog import AgentSkillCatalog, default_catalog
from robotlab.skills.matching import SIMILARITY_THRESHOLD, Injection, SkillIndex
from robotlab.skills.script_tool import ScriptTool

__all__ = ["SIMILARITY_THRESHOLD", "AgentSkill", "AgentSkillCatalog", "Capabilities", "Injection",
           "ScriptTool", "SkillIndex", "default_catalog"]
