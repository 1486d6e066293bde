"""robotlab: LLM robots with tools, budgets, templates, hooks and memory.

Start with ``robotlab.build(name=..., template=..., system_prompt=...)`` and ``robot.run(msg)``;
``docs/robots.md`` walks through the rest. Importing this package only defines things: litellm,
pydantic and jinja2 load on first use.
"""

from __future__ import annotations

from typing import Any

from robotlab.budget import Ledger
from robotlab.config.cascade import config, configure, reload_config
from robotlab.config.run_config import RunConfig
from robotlab.errors import (
    AwaitTimeout,
    BoundaryError,
    BudgetExceeded,
    BusError,
    ConfigError,
    ConfigurationError,
    DelegationTimeout,
    DependencyError,
    InferenceError,
    MCPError,
    RemoteError,
    RobotlabError,
    ToolError,
    ToolLoopError,
    ToolNotFoundError,
    retryable,
    retryable_classes,
)
from robotlab.hooks.hooks import Hook, clear_hooks, hooks, on
from robotlab.hooks.narrator import Narrator
from robotlab.llm import LLM, LiteLLM, LLMReply
from robotlab.prompt.templates import render_template
from robotlab.robot.delegation import DelegationFuture
from robotlab.robot.doom_loop import DoomLoopDetector
from robotlab.robot.message import RobotMessage
from robotlab.robot.result import RobotResult
from robotlab.robot.robot import Robot, build
from robotlab.robot.runnable import Runnable
from robotlab.tools.tool import Tool, tool

__all__ = [
    "LLM",
    "AwaitTimeout",
    "BoundaryError",
    "BudgetExceeded",
    "BusError",
    "ConfigError",
    "ConfigurationError",
    "DelegationFuture",
    "DelegationTimeout",
    "DependencyError",
    "DoomLoopDetector",
    "Hook",
    "InferenceError",
    "LLMReply",
    "Ledger",
    "LiteLLM",
    "MCPError",
    "Narrator",
    "RemoteError",
    "Robot",
    "RobotMessage",
    "RobotResult",
    "RobotlabError",
    "RunConfig",
    "Runnable",
    "Tool",
    "ToolError",
    "ToolLoopError",
    "ToolNotFoundError",
    "build",
    "clear_hooks",
    "config",
    "configure",
    "create_memory",
    "create_network",
    "hooks",
    "on",
    "reload_config",
    "render_template",
    "retryable",
    "retryable_classes",
    "tool",
]


def create_network(name: str, concurrency: str = "auto", config: Any = None, **kwargs: Any) -> Any:
    """Make a ``Network`` (see ``docs/networks.md``); only ``name``, ``concurrency``, ``config``."""
    from robotlab.network.network import create_network as _create

    return _create(name, concurrency, config, **kwargs)


def create_memory(data: dict[str, Any] | None = None, enable_cache: bool = True, **opts: Any) -> Any:
    """Make a reactive ``Memory`` (see ``docs/memory.md``)."""
    from robotlab.memory.memory import Memory

    return Memory(data=data, enable_cache=enable_cache, **opts)
