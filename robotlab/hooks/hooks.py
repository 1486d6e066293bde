"""Hooks: classes whose methods run before, around and after a robot's work.

A hook is a ``Hook`` subclass defining methods named after hook points (``before_run``,
``around_tool_call``, ``on_learn``...; the full list is ``FAMILIES`` below). Register it
globally (``robotlab.on``), on a network (``network.on``), on a robot (``robot.on``) or for one
run (``robot.run(msg, hooks=[...])``). Within a family the order is global, network, robot,
per-run; for around hooks the first registered is the outermost. The ``task`` and
``network_run`` families read only the global and network registries. What each family's
handlers are handed is in ``contexts.py`` (importable from here too).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from robotlab.errors import ConfigError
from robotlab.hooks.contexts import (
    CompactionHookContext,
    HookContext,
    LearnHookContext,
    LlmGenerationHookContext,
    NetworkRunHookContext,
    RunHookContext,
    TaskHookContext,
    ToolCallHookContext,
)

__all__ = [
    "FAMILIES",
    "CompactionHookContext",
    "Hook",
    "HookPoints",
    "HookRegistry",
    "HookScope",
    "LearnHookContext",
    "LlmGenerationHookContext",
    "NetworkRunHookContext",
    "RunHookContext",
    "TaskHookContext",
    "ToolCallHookContext",
    "clear_hooks",
    "global_hooks",
    "hooks",
    "on",
]


@dataclass(frozen=True)
class HookPoints:
    """The method names of one hook family, and where its result is stored on the context."""

    before: str
    around: str
    after: str
    on_error: str | None
    result: str
    point: str | None = None
    networked_only: bool = False
    result_on_context: bool = False
    """True when the core (or an around hook that skips it) sets the result on the context."""


FAMILIES: dict[str, HookPoints] = {
    "run": HookPoints("before_run", "around_run", "after_run", "on_run_error", "response"),
    "llm_generation": HookPoints(
        "before_llm_generation", "around_llm_generation", "after_llm_generation", None,
        "generation_response",
    ),
    "tool_call": HookPoints(
        "before_tool_call", "around_tool_call", "after_tool_call", None, "tool_result",
        result_on_context=True,
    ),
    "network_run": HookPoints(
        "before_network_run", "around_network_run", "after_network_run", "on_network_run_error",
        "result", networked_only=True,
    ),
    "task": HookPoints(
        "before_task", "around_task", "after_task", "on_task_error", "result", networked_only=True
    ),
    "compaction": HookPoints(
        "before_compaction", "around_compaction", "after_compaction", None, "compacted_messages",
        "on_compaction", result_on_context=True,
    ),
    "learn": HookPoints(
        "before_learn", "around_learn", "after_learn", None, "stored", "on_learn",
        result_on_context=True,
    ),
}
"""Every hook family and its points (the Ruby ``on_error`` is spelled per family here)."""


class Hook:
    """Base class of hook handlers: define methods named after hook points.

    ``namespace`` (default: the snake_case class name, e.g. ``AuditHook`` gives
    ``audit_hook``) names the handler's per-run store, ``ctx.local``.
    """

    namespace: str | None = None

    @classmethod
    def hook_namespace(cls) -> str | None:
        """The namespace of this handler class (the base ``Hook`` has none)."""
        explicit = cls.__dict__.get("namespace")
        if explicit or cls is Hook:
            return explicit
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls.__name__).lower()


@dataclass(frozen=True)
class _Entry:
    handler: Any
    namespace: str
    context: dict[str, Any]


class HookRegistry:
    """An ordered, thread-safe list of registered hook handlers."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()

    def on(self, handler: type[Hook] | Hook, context: dict[str, Any] | None = None) -> HookRegistry:
        """Register a ``Hook`` subclass (instantiated once) or instance.

        Raises:
            ConfigError: not a Hook, or a Hook without a namespace.
        """
        cls = handler if isinstance(handler, type) else type(handler)
        if not issubclass(cls, Hook):
            raise ConfigError(f"{cls.__name__} is not a robotlab.Hook subclass")
        namespace = cls.hook_namespace()
        if not namespace:
            raise ConfigError(f"{cls.__name__} has no namespace")
        instance = handler() if isinstance(handler, type) else handler
        with self._lock:
            self._entries.append(_Entry(instance, namespace, dict(context or {})))
        return self

    def entries(self) -> list[_Entry]:
        """A snapshot of the registered handlers, in order."""
        with self._lock:
            return list(self._entries)

    def handlers(self) -> list[Any]:
        """The registered handler objects, in order."""
        return [entry.handler for entry in self.entries()]

    def remove(self, matches: Callable[[Any], bool]) -> int:
        """Remove the handlers for which ``matches(handler)`` is true; how many went."""
        with self._lock:
            kept = [entry for entry in self._entries if not matches(entry.handler)]
            removed, self._entries[:] = len(self._entries) - len(kept), kept
        return removed

    def clear(self) -> None:
        """Remove every handler."""
        with self._lock:
            self._entries.clear()


_GLOBAL = HookRegistry()


def global_hooks() -> HookRegistry:
    """The process-wide registry (``RobotLab.hooks`` in Ruby)."""
    return _GLOBAL


def on(handler: type[Hook] | Hook, context: dict[str, Any] | None = None) -> HookRegistry:
    """Register a hook for every robot in this process."""
    return _GLOBAL.on(handler, context)


def hooks() -> list[Any]:
    """The globally registered hook handlers."""
    return _GLOBAL.handlers()


def clear_hooks() -> None:
    """Remove every global hook."""
    _GLOBAL.clear()


class HookScope:
    """The registries in force for one run, in order (global, network, robot, per-run)."""

    def __init__(self, global_: HookRegistry, network: HookRegistry | None,
                 robot: HookRegistry | None,
                 per_run: Sequence[type[Hook] | Hook] = ()) -> None:
        run_registry = HookRegistry()
        for handler in per_run:
            run_registry.on(handler)
        self._all = [r for r in (global_, network, robot, run_registry) if r is not None]
        self._networked = [r for r in (global_, network) if r is not None]
        self.metadata: dict[str, SimpleNamespace] = {}

    def _entries(self, points: HookPoints) -> list[_Entry]:
        registries = self._networked if points.networked_only else self._all
        return [entry for registry in registries for entry in registry.entries()]

    def _call(self, entry: _Entry, name: str, ctx: HookContext, *args: Any) -> Any:
        method = getattr(entry.handler, name, None)
        if method is None:
            return None
        ctx.metadata = self.metadata
        store = ctx.ext(entry.namespace)
        for key, value in entry.context.items():
            if not hasattr(store, key):
                setattr(store, key, value)
        previous, ctx.active_namespace = ctx.active_namespace, entry.namespace
        try:
            return method(ctx, *args)
        finally:
            ctx.active_namespace = previous

    def run(self, family: str, ctx: HookContext, core: Callable[[], Any]) -> Any:
        """Run ``core`` wrapped in the family's before, around and after hooks.

        On an exception the context's ``error`` is set, the family's error hook (if any) is
        called, and the exception propagates.
        """
        points = FAMILIES[family]
        entries = self._entries(points)
        try:
            for entry in entries:
                self._call(entry, points.before, ctx)
            value = self._around_chain(entries, points, ctx, core)()
            if points.result_on_context:
                value = getattr(ctx, points.result)
            else:
                setattr(ctx, points.result, value)
            for entry in entries:
                self._call(entry, points.after, ctx)
            return value
        except Exception as exc:
            ctx.error = exc  # type: ignore[attr-defined]
            if points.on_error:
                for entry in entries:
                    self._call(entry, points.on_error, ctx)
            raise

    def _around_chain(
        self, entries: list[_Entry], points: HookPoints, ctx: HookContext, core: Callable[[], Any]
    ) -> Callable[[], Any]:
        chain = core
        for entry in reversed(entries):
            if getattr(entry.handler, points.around, None) is not None:
                chain = self._wrap(entry, points.around, ctx, chain)
        return chain

    def _wrap(self, entry: _Entry, name: str, ctx: HookContext,
              inner: Callable[[], Any]) -> Callable[[], Any]:
        return lambda: self._call(entry, name, ctx, inner)

    def fire(self, family: str, ctx: HookContext) -> None:
        """Call the family's point hook (``on_learn``, ``on_compaction``) on every handler."""
        point = FAMILIES[family].point
        if point:
            for entry in self._entries(FAMILIES[family]):
                self._call(entry, point, ctx)
