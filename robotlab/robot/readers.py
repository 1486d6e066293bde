"""The read-only properties of ``Robot``: which model, prompt and tools it was built with,
what MCP gave it, its budget ledger and its learnings.

A façade like those in ``facades.py``: it holds no state and only reads the collaborators it
names below, which ``Robot.__init__`` sets; everything a robot does lives elsewhere.
"""

from __future__ import annotations

from typing import Any

from robotlab.budget import RobotBudget
from robotlab.config.run_config import RunConfig
from robotlab.llm import LLM
from robotlab.robot.learnings import Learnings
from robotlab.robot.setup import RobotSetup
from robotlab.tools.mcp import MCPConnections
from robotlab.tools.tool import Tool

__all__ = ["RobotReaders"]


class RobotReaders:
    """What a robot was built with, read through its set-up, config, MCP connections, budget
    and learnings."""

    config: RunConfig
    _setup: RobotSetup
    _mcp: MCPConnections
    _budget: RobotBudget
    _learnings: Learnings

    @property
    def model(self) -> str:
        """The model id as configured (without the provider prefix)."""
        return self._setup.model

    @property
    def provider(self) -> str | None:
        """The provider, if one was named."""
        return self._setup.provider

    @property
    def template(self) -> str | None:
        """The main template's name."""
        return self._setup.prompt.template

    @property
    def system_prompt(self) -> str | None:
        """The combined system message (rendered template, skills, inline prompt), or None."""
        return self._setup.system_text

    @property
    def local_tools(self) -> list[Tool]:
        """Attached tool instances."""
        return list(self._setup.local_tools)

    @property
    def mcp_tools(self) -> list[Tool]:
        """Tools discovered on connected MCP servers."""
        return self._mcp.tools

    @property
    def tools_config(self) -> Any:
        """The build-time ``tools`` value (None when unset)."""
        return self.config.tools

    @property
    def mcp_config(self) -> Any:
        """The build-time ``mcp`` value (None when unset)."""
        return self.config.mcp

    @property
    def llm(self) -> LLM:
        """The model seam this robot calls."""
        return self._setup.llm

    @property
    def budget_ledger(self) -> Any:
        """The budget ledger, or None when neither budget is set."""
        return self._budget.ledger

    @property
    def learnings(self) -> list[str]:
        """Lessons learned, in insertion order."""
        return list(self._learnings.items)

    def failed_mcp_server_names(self) -> list[str]:
        """MCP servers that could not be connected."""
        return self._mcp.failed_names()

    def effective_config(self) -> dict[str, Any]:
        """The set fields of the robot's config."""
        return self.config.to_dict()
