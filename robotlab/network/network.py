"""Network: robots in a dependency pipeline, sharing one memory (spec section 20).

Build one with :func:`create_network`, add tasks with :meth:`Network.task`, then ``run``::

    with robotlab.create_network(name="review", config=RunConfig(model="m")) as net:
        net.task("draft", writer)
        net.task("critique", critic, depends_on=["draft"])
        net.task("legal", lawyer, depends_on=["draft"], optional=True)
    result = net.run("Write a launch note")

The graph is checked when the ``with`` block ends (or at :meth:`Network.build`, or the first
run): an unknown dependency, a cycle, or a robot the network cannot find is refused, naming
the tasks. A member is a local ``Robot``, a ``spawn`` handle, or the name of a robot serving
on the broker (``robotlab/network/member.py``). Companions: ``flow.py`` (waves and results),
``task.py`` (one task), ``graph.py`` (drawings), ``broadcast.py`` (messages to every handler).
``docs/networks.md`` has the whole story.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

from robotlab.config.run_config import RunConfig
from robotlab.errors import ConfigError
from robotlab.hooks.hooks import Hook, HookRegistry, HookScope, NetworkRunHookContext, global_hooks
from robotlab.memory.memory import Memory
from robotlab.memory.service import MemoryService, service_name
from robotlab.network.broadcast import BROADCAST_KEY, Broadcast, BroadcastHandler
from robotlab.network.flow import FlowResult, WaveRunner, effective_dependencies, plan_waves
from robotlab.network.graph import TaskGraph, ascii_tree, dot, mermaid
from robotlab.network.member import BusMember, resolve_member
from robotlab.network.task import Activation, Member, Task, task_dependencies
from robotlab.robot.runnable import Runnable

__all__ = ["BROADCAST_KEY", "CONCURRENCY_MODES", "Network", "create_network"]

CONCURRENCY_MODES = ("auto", "threads", "async")
"""Accepted for Ruby parity; every mode runs a wave's tasks on threads with the same cap."""


class Network(Runnable):
    """Robots in a pipeline of tasks, sharing one :class:`~robotlab.memory.memory.Memory`.

    Args:
        name: the network's name (stamped on memory changes).
        concurrency: ``"auto"``, ``"threads"`` or ``"async"`` (all behave the same).
        memory: the shared memory (default: a new one named after the network).
        config: defaults for members (LLM fields they leave unset, ``"inherit"`` tools/MCP),
            ``max_concurrent_robots`` (a hard cap on tasks running at once), and ``bus``, the
            bus client used to reach members named by their robot name.
        bus: the bus client, when not given in ``config``.
        shared_hooks: the registry read before the network's own, in place of the process-wide
            one ``robotlab.on`` fills (a member robot reads its own ``shared_hooks``).
    """

    def __init__(
        self,
        name: str,
        concurrency: str = "auto",
        memory: Memory | None = None,
        config: RunConfig | dict[str, Any] | None = None,
        bus: Any = None,
        shared_hooks: HookRegistry | None = None,
    ) -> None:
        if concurrency not in CONCURRENCY_MODES:
            raise ConfigError(f"concurrency must be one of {', '.join(CONCURRENCY_MODES)}, "
                              f"not {concurrency!r}")
        self.name = str(name)
        self.concurrency = concurrency
        self.config = RunConfig.of(config)
        self.bus = bus if bus is not None else self.config.bus
        self.memory = memory if memory is not None else Memory(network_name=self.name)
        self.hooks = HookRegistry()
        self.shared_hooks = shared_hooks if shared_hooks is not None else global_hooks()
        self._robots: dict[str, Any] = {}
        self._tasks: dict[str, Task] = {}
        self._pending: dict[str, Any] = {}
        self._waves: list[list[str]] | None = None
        self._broadcast = Broadcast()
        self._lock = threading.Lock()
        self._service: MemoryService | None = None

    # -- building --------------------------------------------------------------------------

    def task(
        self,
        name: str,
        robot: Any,
        *,
        depends_on: Iterable[str] | str | None = None,
        optional: bool = False,
        context: dict[str, Any] | None = None,
        mcp: Any = "none",
        tools: Any = "none",
        memory: Any = None,
        config: RunConfig | dict[str, Any] | None = None,
        activate: Activation | None = None,
    ) -> Network:
        """Add a task running ``robot`` (a Robot, a spawn handle, or a robot name on the bus).

        ``depends_on`` also takes Ruby's ``"none"`` and ``"optional"`` (the latter is
        ``optional=True`` with no dependencies). Returns the network, for chaining.

        Raises:
            ConfigError: a task with this name already exists.
        """
        name = str(name)
        if name in self._tasks or name in self._pending:
            raise ConfigError(f"Task '{name}' already exists in network '{self.name}'")
        deps, optional = task_dependencies(depends_on, optional)
        self._pending[name] = robot
        self._tasks[name] = Task(
            name=name,
            robot=robot,
            depends_on=deps,
            optional=optional,
            context=dict(context or {}),
            mcp=mcp,
            tools=tools,
            memory=memory,
            config=RunConfig.of(config) if config is not None else None,
            activate=activate,
        )
        self._waves = None
        return self

    def build(self) -> Network:
        """Check the graph and find every member; safe to call again after more tasks.

        Raises:
            ConfigError: an unknown dependency, a cycle, or a member that cannot be found.
        """
        with self._lock:
            waves = plan_waves(self._dependencies(), self.name)
            for name, robot in list(self._pending.items()):
                member = resolve_member(robot, self, task_name=name)
                self._tasks[name].robot = member
                self._robots[name] = member
                del self._pending[name]
            self._waves = waves
        if any(isinstance(m, BusMember) for m in self._robots.values()):
            self.serve_memory()
        return self

    def _dependencies(self) -> dict[str, tuple[str, ...]]:
        declared = {name: task.depends_on for name, task in self._tasks.items()}
        return effective_dependencies(declared, [n for n, t in self._tasks.items() if t.optional])

    def serve_memory(self) -> str:
        """Share the memory on the bus as ``memory/<network>`` (done by :meth:`build` when a
        member runs in another process); returns the service name.

        Raises:
            ConfigError: the network has no bus.
        """
        if self.bus is None:
            raise ConfigError(f"network '{self.name}' has no bus to serve its memory on")
        with self._lock:
            if self._service is None:
                self._service = MemoryService.start(self.memory, self.bus.url,
                                                    service_name(self.name))
        return self._service.name

    @property
    def memory_service_name(self) -> str | None:
        """The bus name members in other processes reach the memory by, once served."""
        return self._service.name if self._service is not None else None

    def close(self) -> None:
        """Stop serving the memory; members still using it get errors from then on."""
        with self._lock:
            service, self._service = self._service, None
        if service is not None:
            service.close()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.build()

    # -- running ---------------------------------------------------------------------------

    def run(self, message: Any = None, **context: Any) -> FlowResult:
        """Run the pipeline; ``run("hi")`` is ``run(message="hi")``.

        Returns:
            The final :class:`FlowResult`: ``value`` is the last robot's result, ``context``
            holds each robot's result by robot name plus ``run_params``, ``errors`` the
            failures by task, ``activated_steps`` the optional tasks that were activated.

        Raises:
            ConfigError: more tasks than the global ``max_iterations`` (and nothing has run).
        """
        if self._waves is None:
            self.build()
        if message is not None:
            context["message"] = message
        params = dict(context)
        initial = FlowResult(value=params, context={"run_params": params})
        ctx = NetworkRunHookContext(network=self, context=params, memory=self.memory,
                                    config=self.config)
        scope = HookScope(self.shared_hooks, self.hooks, None)
        # refuses more tasks than max_iterations before a hook or robot runs
        runner = self._runner()
        return scope.run("network_run", ctx, lambda: runner.run(initial))

    def _step(self, task: Task) -> Callable[[FlowResult], FlowResult]:
        """The wave runner's call for one task: run it with the result so far, in this network."""
        return lambda result: task(result, self)

    def _runner(self) -> WaveRunner:
        tasks = dict(self._tasks)
        return WaveRunner(
            self._waves or [],
            {name: self._step(task) for name, task in tasks.items()},
            self._dependencies(),
            optional=[name for name, task in tasks.items() if task.optional],
            max_concurrent=self.config.max_concurrent_robots,
            network=self.name,
        )

    # -- membership ------------------------------------------------------------------------

    @property
    def robots(self) -> dict[str, Any]:
        """The members by task name (or robot name, for ``add_robot``), in insertion order."""
        return {**self._robots, **self._pending}

    def robot(self, name: str) -> Any:
        """The member registered under ``name``, or None."""
        return self.robots.get(str(name))

    __getitem__ = robot

    def available_robots(self) -> list[Any]:
        """Every member, in insertion order."""
        return list(self.robots.values())

    def add_robot(self, robot: Member) -> Network:
        """Add a member without a task, keyed by its name.

        Raises:
            ConfigError: a member with that name is already there.
        """
        if robot.name in self.robots:
            raise ConfigError(f"Robot '{robot.name}' already exists in network '{self.name}'")
        self._robots[robot.name] = robot
        return self

    def remove_robot(self, name: str) -> Any:
        """Remove a member by name and return it (None when absent); tasks are not changed."""
        self._pending.pop(str(name), None)
        return self._robots.pop(str(name), None)

    @property
    def crew(self) -> list[Any]:
        """The members in pipeline order (Runnable; ``chief`` and ``robot_count`` follow)."""
        return self.available_robots()

    def network(self) -> bool:
        """True (Runnable ``network?``)."""
        return True

    # -- broadcast, hooks, introspection ---------------------------------------------------

    def on_broadcast(self, handler: BroadcastHandler | None = None) -> Network:
        """Call ``handler(message)`` on a thread of its own for every :meth:`broadcast`."""
        self._broadcast.add(handler)
        return self

    def broadcast(self, payload: Any) -> Network:
        """Send ``{"payload", "network", "timestamp"}`` to every broadcast handler, and set it
        under memory key ``_network_broadcast`` so memory subscribers (in any process) see it.

        Handler errors are logged, never raised.
        """
        self._broadcast.send(payload, self.name, self.memory)
        return self

    def on(self, handler: type[Hook] | Hook, context: dict[str, Any] | None = None) -> Network:
        """Register a hook for every run of this network (and its members' runs)."""
        self.hooks.on(handler, context)
        return self

    def reset_memory(self) -> Network:
        """Empty the shared memory (subscriptions stay)."""
        self.memory.reset()
        return self

    def execution_plan(self) -> str:
        """The waves, one line each, optional tasks marked with ``?``."""
        waves = self._plan()
        lines = []
        for number, wave in enumerate(waves, 1):
            names = [f"{n}?" if self._tasks[n].optional else n for n in wave]
            lines.append(f"wave {number}: {', '.join(names)}")
        return "\n".join(lines)

    def _plan(self) -> list[list[str]]:
        return self._waves or plan_waves(self._dependencies(), self.name)

    def _graph(self) -> TaskGraph:
        optional = frozenset(n for n, t in self._tasks.items() if t.optional)
        return TaskGraph(self.name, self._dependencies(), optional, self._plan())

    def visualize(self) -> str:
        """The dependency graph as ASCII: the waves, each task with what it waits for.

        Raises:
            ConfigError: an unknown dependency or a cycle (as for ``build``).
        """
        return ascii_tree(self._graph())

    def to_mermaid(self) -> str:
        """The dependency graph as a Mermaid flowchart (optional tasks rounded, dashed edges)."""
        return mermaid(self._graph())

    def to_dot(self) -> str:
        """The dependency graph as Graphviz DOT (optional tasks and their edges dashed)."""
        return dot(self._graph())

    def to_dict(self) -> dict[str, Any]:
        """``{name, robots, tasks, optional_tasks, config}`` as plain data (Ruby ``to_h``)."""
        return {
            "name": self.name,
            "robots": list(self.robots),
            "tasks": list(self._tasks),
            "optional_tasks": [n for n, t in self._tasks.items() if t.optional],
            "config": self.config.to_json_dict(),
        }

    to_h = to_dict

    def __repr__(self) -> str:
        return f"<Network {self.name!r} tasks={list(self._tasks)!r}>"


def create_network(
    name: str, concurrency: str = "auto", config: RunConfig | dict[str, Any] | None = None
) -> Network:
    """Build a :class:`Network` (Ruby ``RobotLab.create_network``; only these keywords)."""
    return Network(name=name, concurrency=concurrency, config=config)
