"""Skill bundles (AgentSkills): SKILL.md instructions and the scripts beside it, as sandboxed tools."""

from __future__ import annotations

from robotlab.skills.bundle import AgentSkill, AgentSkillCatalog
from robotlab.skills.capabilities import Capabilities
from robotlab.skills.script_tool import ScriptTool

__all__ = ["AgentSkill", "AgentSkillCatalog", "Capabilities", "ScriptTool"]
