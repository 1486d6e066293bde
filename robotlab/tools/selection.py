"""Which tools (and MCP servers) a run sends: ``"inherit"`` / ``"none"`` / name lists / None.

Levels, outermost first: global config, the network's config, the robot's build value, the
run's value. ``resolve`` turns one level into a list against its parent; ``select_tools``
applies the run's value to the attached tools and caps the result at ``max_tools``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from robotlab.tools.tool import Tool

__all__ = [
    "DEFAULT_MAX_TOOLS",
    "cap_tools",
    "is_explicit_none",
    "is_none_value",
    "parent_value",
    "resolve",
    "select_tools",
]

DEFAULT_MAX_TOOLS = 128
log = logging.getLogger("robotlab.robot.robot")


def is_none_value(value: Any) -> bool:
    """True for None, ``"none"`` and an empty list: the values that mean "no list"."""
    if value is None or value == "none":
        return True
    return isinstance(value, (list, tuple)) and not value


def is_explicit_none(value: Any) -> bool:
    """True for ``"none"`` and a literal empty list (but not None, which means "no filter")."""
    return value is not None and is_none_value(value)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def resolve(value: Any, parent: Any) -> list[Any]:
    """One level of resolution.

    ``"inherit"`` takes the parent's value, a none value gives ``[]``.
    """
    if value == "inherit":
        return _as_list(parent)
    if is_none_value(value):
        return []
    return _as_list(value)


def parent_value(key: str, network_config: Any, settings: Any) -> Any:
    """The parent of a robot's build-time ``tools``/``mcp``: the network's config, else the
    robot's default ``settings`` (the global configuration unless the robot was given others)."""
    if network_config is not None and network_config.has(key):
        return getattr(network_config, key)
    return getattr(settings, key)


def cap_tools(tools: list[Tool], max_tools: int | None, robot_name: str) -> list[Tool]:
    """The first ``max_tools`` tools (128 when unset or not positive), warning once on overflow."""
    limit = max_tools if isinstance(max_tools, int) and max_tools > 0 else DEFAULT_MAX_TOOLS
    if len(tools) <= limit:
        return tools
    log.warning(
        "[%s] tool list (%d) exceeds max_tools (%d); sending %d, dropping %d",
        robot_name, len(tools), limit, limit, len(tools) - limit,
    )
    return tools[:limit]


def select_tools(
    available: Sequence[Tool], runtime: Any, build: Any, parent: Any, *, max_tools: int | None,
    robot_name: str
) -> list[Tool]:
    """The tools one run sends to the provider.

    Args:
        available: local tools then MCP tools, in that order.
        runtime: the ``run(tools=...)`` value (default ``"none"``: no tools at all).
        build: the robot's build-time ``tools`` value.
        parent: the network's (or global) ``tools`` value, used when ``build`` is ``"inherit"``.
        max_tools: the cap; see ``cap_tools``.
        robot_name: for the overflow warning.
    """
    if is_explicit_none(runtime):
        return []
    allow = [str(name) for name in resolve(runtime, resolve(build, parent))]
    chosen = [t for t in available if t.name in allow] if allow else list(available)
    return cap_tools(chosen, max_tools, robot_name)
