"""What a hook handler is handed: one context class per hook family, and each handler's own store.

``robotlab/hooks/hooks.py`` builds no contexts: the robot, network and history code that runs a
family makes its context and passes it to :meth:`~robotlab.hooks.hooks.HookScope.run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from robotlab.errors import ConfigError


@dataclass(kw_only=True)
class HookContext:
    """What every family's context holds: each handler's own store for the run."""

    metadata: dict[str, SimpleNamespace] = field(default_factory=dict, repr=False)
    active_namespace: str | None = field(default=None, repr=False)

    @property
    def local(self) -> SimpleNamespace:
        """The active handler's own store for this run.

        Raises:
            ConfigError: no handler is running.
        """
        if self.active_namespace is None:
            raise ConfigError("ctx.local is only available inside a hook handler")
        return self.ext(self.active_namespace)

    def ext(self, namespace: str) -> SimpleNamespace:
        """Another handler's store for this run."""
        return self.metadata.setdefault(namespace, SimpleNamespace())

    def to_dict(self) -> dict[str, Any]:
        """The context's fields (handler stores excluded)."""
        return {k: v for k, v in vars(self).items() if k not in ("metadata", "active_namespace")}


@dataclass(kw_only=True)
class RunHookContext(HookContext):
    """Context of the ``run`` family."""

    robot: Any
    network: Any = None
    task: Any = None
    memory: Any = None
    config: Any = None
    request: Any = None
    response: Any = None
    error: BaseException | None = None


@dataclass(kw_only=True)
class LlmGenerationHookContext(RunHookContext):
    """Context of the ``llm_generation`` family (once per run, around the whole tool loop)."""

    iteration: int = 0
    generation_response: Any = None


@dataclass(kw_only=True)
class ToolCallHookContext(HookContext):
    """Context of the ``tool_call`` family.

    Set ``tool_result`` in an around hook to skip the tool.
    """

    tool: Any
    tool_name: str
    tool_args: dict[str, Any]
    robot: Any = None
    tool_result: Any = None
    tool_error: BaseException | None = None
    error: BaseException | None = None


@dataclass(kw_only=True)
class NetworkRunHookContext(HookContext):
    """Context of the ``network_run`` family."""

    network: Any
    context: dict[str, Any] = field(default_factory=dict)
    memory: Any = None
    config: Any = None
    result: Any = None
    error: BaseException | None = None


@dataclass(kw_only=True)
class TaskHookContext(HookContext):
    """Context of the ``task`` family."""

    network: Any
    task: Any
    task_name: str
    robot: Any = None
    memory: Any = None
    config: Any = None
    result: Any = None
    error: BaseException | None = None


@dataclass(kw_only=True)
class CompactionHookContext(HookContext):
    """Context of the ``compaction`` family.

    An ``on_compaction`` handler may set ``compacted_messages``.
    """

    robot: Any
    messages_before: tuple[Any, ...] = ()
    config: Any = None
    strategy: str = "context_window"
    compacted_messages: list[Any] | None = None
    error: BaseException | None = None

    @property
    def handled(self) -> bool:
        """True once a handler supplied the compacted messages."""
        return self.compacted_messages is not None


@dataclass(kw_only=True)
class LearnHookContext(HookContext):
    """Context of the ``learn`` family."""

    robot: Any
    text: str
    learnings_before: tuple[str, ...] = ()
    stored: bool = False
    error: BaseException | None = None
