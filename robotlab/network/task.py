"""A network task: one member robot with its per-task settings, run as one pipeline step.

``Network.task(...)`` builds a :class:`Task`; at run time the network calls it with the result
of the previous wave. The task deep-merges its ``context`` into the run params, writes its
``mcp``/``tools`` there when they are not ``"none"`` (so they carry forward to later tasks, as
in Ruby), runs the ``task`` hook family around the member, and turns a member that raises into
an ``Error: <Class>: <message>`` result so the pipeline goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from robotlab.config.cascade import deep_merge
from robotlab.config.run_config import RunConfig
from robotlab.errors import RemoteError
from robotlab.hooks.hooks import HookScope, TaskHookContext
from robotlab.network.flow import FlowResult
from robotlab.robot.result import RobotResult

__all__ = ["Activation", "Member", "Task", "deep_merge", "is_none", "task_dependencies"]

Activation = Callable[[RobotResult, FlowResult], "str | Iterable[str] | None"]
"""Chooses the optional tasks to activate from a task's robot result."""


class NetworkView(Protocol):
    """What a task and its member read of the network that runs them (``Network`` is one).

    A protocol rather than the class, so the pieces of a network do not import the network.
    """

    name: str
    config: RunConfig
    memory: Any
    hooks: Any
    shared_hooks: Any
    bus: Any

    @property
    def robots(self) -> dict[str, Any]: ...


@runtime_checkable
class Member(Protocol):
    """Anything a task can run: a local ``Robot``, a ``spawn`` handle, a robot on the broker."""

    name: str

    def run(self, message: Any = None, **kwargs: Any) -> RobotResult: ...


def is_none(value: Any) -> bool:
    """True for the "none" tool/MCP setting (the Ruby ``:none``), which a task does not write."""
    return isinstance(value, str) and value.lstrip(":") == "none"


@dataclass
class Task:
    """One step of a network.

    Attributes:
        name: the task name (unique in the network).
        robot: the member that runs it.
        depends_on: tasks that must finish first.
        optional: run only when an earlier step activates it.
        context: deep-merged over the run params for this task and the ones after it.
        mcp: MCP servers for the member (``"none"``: leave the run params alone).
        tools: tool names for the member (``"none"``: leave the run params alone).
        memory: a memory or dict handed to the member's run as ``memory=``.
        config: merged over the network config for this task's member.
        activate: called with the member's result; the optional tasks it names are activated.
    """

    name: str
    robot: Member
    depends_on: tuple[str, ...] = ()
    optional: bool = False
    context: dict[str, Any] = field(default_factory=dict)
    mcp: Any = "none"
    tools: Any = "none"
    memory: Any = None
    config: RunConfig | None = None
    activate: Activation | None = None

    def run_params(self, result: FlowResult) -> dict[str, Any]:
        """The run params this task's member sees (and that later tasks inherit)."""
        params = deep_merge(result.context.get("run_params") or {}, self.context)
        if not is_none(self.mcp):
            params["mcp"] = self.mcp
        if not is_none(self.tools):
            params["tools"] = self.tools
        return params

    def __call__(self, result: FlowResult, network: NetworkView) -> FlowResult:
        """Run the member on ``result`` inside the ``task`` hooks; returns the next result."""
        params = self.run_params(result)
        flow = result.with_context("run_params", params)
        config = network.config.merge(self.config) if self.config else network.config
        ctx = TaskHookContext(
            network=network,
            task=self,
            task_name=self.name,
            robot=self.robot,
            memory=network.memory,
            config=config,
        )
        scope = HookScope(network.shared_hooks, network.hooks, None)
        return scope.run("task", ctx, lambda: self._call_member(flow, params, config, network))

    def _call_member(
        self, flow: FlowResult, params: dict[str, Any], config: RunConfig, network: NetworkView
    ) -> FlowResult:
        kwargs = _member_kwargs(flow.value, params)
        message = kwargs.pop("message", None)
        started = time.monotonic()
        try:
            robot_result = self.robot.run(
                message,
                network=network,
                task=self,
                network_memory=network.memory,
                network_config=config,
                memory=self.memory,
                **kwargs,
            )
        except Exception as error:
            # Ruby's Robot#call rescues everything: the step reports the error and the
            # pipeline goes on; the task's on_error hooks do not fire for it.
            text = _error_text(error)
            robot_result = RobotResult(self.robot.name, reply=f"Error: {text}",
                                       duration=time.monotonic() - started)
            flow = flow.with_error(self.name, text)
            return flow.with_context(self.robot.name, robot_result).continue_(robot_result)
        if robot_result.duration is None:
            robot_result.duration = time.monotonic() - started
        out = flow.with_context(self.robot.name, robot_result).continue_(robot_result)
        return self._activate(robot_result, out)

    def _activate(self, robot_result: RobotResult, out: FlowResult) -> FlowResult:
        if self.activate is None:
            return out
        names = self.activate(robot_result, out)
        if names is None:
            return out
        return out.activate(*([names] if isinstance(names, str) else names))



def task_dependencies(depends_on: Iterable[str] | str | None,
                      optional: bool) -> tuple[tuple[str, ...], bool]:
    """A task's dependencies and optionality from ``depends_on`` as :meth:`Network.task` takes it.

    Ruby's ``"none"`` means no dependencies; ``"optional"`` means none and ``optional=True``.
    """
    if depends_on is None or depends_on == "none":
        return (), optional
    if depends_on == "optional":
        return (), True
    if isinstance(depends_on, str):
        return (depends_on,), optional
    return tuple(str(d) for d in depends_on), optional


def _error_text(error: Exception) -> str:
    """``<Class>: <message>``; a remote robot's error reads as if it had been raised here."""
    if isinstance(error, RemoteError):
        return f"{error.type_name}: {error.detail}"
    return f"{type(error).__name__}: {error}"


def _member_kwargs(value: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the member's run: the params, then the message from ``value``.

    A dict value fills in keys the params lack; a robot result's reply, or a string, becomes
    the message (so each robot reads the previous robot's answer).
    """
    kwargs = dict(params)
    if isinstance(value, Mapping):
        for key, item in value.items():
            kwargs.setdefault(key, item)
    elif isinstance(value, RobotResult):
        kwargs["message"] = value.reply
    elif isinstance(value, str):
        kwargs["message"] = value
    return kwargs
