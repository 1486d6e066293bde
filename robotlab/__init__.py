"""robotlab: LLM robots with tools, budgets, templates, hooks and memory.

Start with ``robotlab.build(name=..., template=..., system_prompt=...)`` and ``robot.run(msg)``;
``docs/robots.md`` walks through the rest. Importing this package only defines things: the
public names load on first use (PEP 562), so ``import robotlab`` pulls in neither pydantic,
jinja2, zmq nor litellm, and a command line that imports it prints its first line at once.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from robotlab.budget import Ledger
    from robotlab.config.cascade import config, configure, reload_config
    from robotlab.config.run_config import RunConfig
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
    from robotlab.tools.effects import idempotency_key
    from robotlab.tools.tool import Tool, tool

_LAZY = {
    "configure": "robotlab.config.cascade",
    "reload_config": "robotlab.config.cascade",
    "Hook": "robotlab.hooks.hooks",
    "clear_hooks": "robotlab.hooks.hooks",
    "on": "robotlab.hooks.hooks",
    "Ledger": "robotlab.budget",
    "RunConfig": "robotlab.config.run_config",
    "Narrator": "robotlab.hooks.narrator",
    "LLM": "robotlab.llm",
    "LiteLLM": "robotlab.llm",
    "LLMReply": "robotlab.llm",
    "render_template": "robotlab.prompt.templates",
    "DelegationFuture": "robotlab.robot.delegation",
    "DoomLoopDetector": "robotlab.robot.doom_loop",
    "RobotMessage": "robotlab.robot.message",
    "RobotResult": "robotlab.robot.result",
    "Robot": "robotlab.robot.robot",
    "build": "robotlab.robot.robot",
    "Runnable": "robotlab.robot.runnable",
    "Tool": "robotlab.tools.tool",
    "tool": "robotlab.tools.tool",
    "idempotency_key": "robotlab.tools.effects",
}
"""Public names loaded on first use: name -> the module that defines it."""

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
    "idempotency_key",
    "on",
    "reload_config",
    "render_template",
    "retryable",
    "retryable_classes",
    "tool",
]


def __getattr__(name: str) -> Any:
    """Load a public name on first use, and keep it (the next lookup is a plain attribute)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'robotlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "config", "hooks"})


def create_network(name: str, concurrency: str = "auto", config: Any = None, **kwargs: Any) -> Any:
    """Make a ``Network`` (see ``docs/networks.md``); only ``name``, ``concurrency``, ``config``."""
    from robotlab.network.network import create_network as _create

    return _create(name, concurrency, config, **kwargs)


def create_memory(data: dict[str, Any] | None = None, enable_cache: bool = True,
                  **opts: Any) -> Any:
    """Make a reactive ``Memory`` (see ``docs/memory.md``)."""
    from robotlab.memory.memory import Memory

    return Memory(data=data, enable_cache=enable_cache, **opts)


class _Package(types.ModuleType):
    """This package's module, where ``config`` and ``hooks`` are the spec's functions
    (``RobotLab.config`` and ``RobotLab.hooks``) though they also name subpackages.

    Data descriptors on the module's class win over its namespace, so the two functions load
    on first use like the names in ``_LAZY``, and the import system's binding of the
    subpackage of the same name (when ``robotlab.config.settings`` is first imported, say)
    does not replace them: a handler-only member never loads the configuration cascade or
    the hook registry.
    """

    @property
    def config(self) -> Any:
        from robotlab.config.cascade import config

        return config

    @config.setter
    def config(self, subpackage: types.ModuleType) -> None:
        """The subpackage stays reachable as ``sys.modules["robotlab.config"]``."""

    @property
    def hooks(self) -> Any:
        from robotlab.hooks.hooks import hooks

        return hooks

    @hooks.setter
    def hooks(self, subpackage: types.ModuleType) -> None:
        """The subpackage stays reachable as ``sys.modules["robotlab.hooks"]``."""


sys.modules[__name__].__class__ = _Package
