"""The pipeline under a network: the step result, dependency waves, and the wave runner.

This is the Python counterpart of the SimpleFlow gem the Ruby network is built on. Steps are
named callables ``FlowResult -> FlowResult``. ``plan_waves`` checks the dependency graph once
(unknown names and cycles are refused, naming the tasks) and orders the steps in waves;
``WaveRunner`` runs each wave's steps concurrently on threads, never more at once than the
cap, and merges their results; it refuses more steps than the global ``max_iterations``.
Read ``robotlab/network/network.py`` for how tasks become steps.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from robotlab.config.cascade import config as global_config
from robotlab.errors import ConfigError

__all__ = ["FlowResult", "Step", "WaveRunner", "effective_dependencies", "plan_waves"]

_UNSET: Any = object()


@dataclass(frozen=True)
class FlowResult:
    """What flows from step to step, and what ``Network.run`` returns (SimpleFlow ``Result``).

    Every method returns a new result; a result is never changed in place, so parallel steps
    can share the one they were given.

    Attributes:
        value: the last step's value: a ``RobotResult`` after a robot step (the run params
            before the first one).
        context: step outputs keyed by robot name, plus ``"run_params"``.
        errors: messages keyed by task name (a robot that raised adds one).
        activated_steps: optional tasks activated so far, in activation order.
        halted: True once a step called :meth:`halt`; no later step runs.
    """

    value: Any = None
    context: Mapping[str, Any] = field(default_factory=dict)
    errors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    activated_steps: tuple[str, ...] = ()
    halted: bool = False

    def is_continue(self) -> bool:
        """True unless the pipeline was halted (Ruby ``continue?``)."""
        return not self.halted

    def continue_(self, value: Any) -> FlowResult:
        """The same result carrying ``value`` on (Ruby ``continue``, a Python keyword)."""
        return dataclasses.replace(self, value=value)

    def halt(self, value: Any = _UNSET) -> FlowResult:
        """Stop the pipeline after this step, optionally with a final ``value``."""
        if value is _UNSET:
            return dataclasses.replace(self, halted=True)
        return dataclasses.replace(self, halted=True, value=value)

    def activate(self, *names: str) -> FlowResult:
        """Mark optional tasks to run in a later wave."""
        activated = dict.fromkeys((*self.activated_steps, *map(str, names)))
        return dataclasses.replace(self, activated_steps=tuple(activated))

    def with_context(self, key: str, value: Any) -> FlowResult:
        """Add or replace one context entry."""
        return dataclasses.replace(self, context={**self.context, str(key): value})

    def with_error(self, key: str, message: str) -> FlowResult:
        """Record an error message under ``key``."""
        errors = dict(self.errors)
        errors[str(key)] = (*errors.get(str(key), ()), message)
        return dataclasses.replace(self, errors=errors)

    @property
    def reply(self) -> str | None:
        """The last robot's reply text, when the value is a robot result."""
        return getattr(self.value, "reply", None)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: values with ``to_dict`` (robot results) are exported with it."""
        return {
            "value": _plain(self.value),
            "context": {k: _plain(v) for k, v in self.context.items()},
            "errors": {k: list(v) for k, v in self.errors.items()},
            "activated_steps": list(self.activated_steps),
            "halted": self.halted,
        }


def _plain(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


def plan_waves(depends_on: Mapping[str, Sequence[str]], network: str = "") -> list[list[str]]:
    """Order tasks in waves: each wave holds the tasks whose dependencies are all in earlier ones.

    Tasks keep their declaration order inside a wave.

    Raises:
        ConfigError: a dependency names no task, or the dependencies form a cycle; the message
            names the tasks involved.
    """
    where = f" in network '{network}'" if network else ""
    for task, deps in depends_on.items():
        missing = [d for d in deps if d not in depends_on]
        if missing:
            names = ", ".join(f"'{m}'" for m in missing)
            raise ConfigError(f"Task '{task}' depends on unknown task {names}{where}")
    placed: set[str] = set()
    waves: list[list[str]] = []
    remaining = dict(depends_on)
    while remaining:
        wave = [t for t, deps in remaining.items() if all(d in placed for d in deps)]
        if not wave:
            cycle = " -> ".join(_find_cycle(remaining))
            raise ConfigError(f"Dependency cycle{where}: {cycle}")
        waves.append(wave)
        placed.update(wave)
        for task in wave:
            del remaining[task]
    return waves


def effective_dependencies(
    declared: Mapping[str, Sequence[str]], optional: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """The dependencies steps run by: an optional step declared with none (Ruby's
    ``depends_on: :optional``) waits for the steps declared before it, so the step that
    activates it has run first; the others keep what they declared.

    A step declared before it that already depends on it (directly or not) is left out, so
    this never makes a cycle of its own.
    """
    loose = {name for name in optional if not declared.get(name)}
    earlier: list[str] = []
    effective: dict[str, tuple[str, ...]] = {}
    for name, deps in declared.items():
        if name in loose:
            effective[name] = tuple(e for e in earlier if not _reaches(declared, e, name))
        else:
            effective[name] = tuple(deps)
            earlier.append(name)
    return effective


def _reaches(graph: Mapping[str, Sequence[str]], start: str, target: str) -> bool:
    seen: set[str] = set()
    stack = [start]
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return False


def _find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str]:
    # Every node left has an unplaced dependency, so walking first dependencies must revisit
    # a node; the walk from that node back to itself is the cycle.
    path: list[str] = []
    node = next(iter(graph))
    while node not in path:
        path.append(node)
        node = next(d for d in graph[node] if d in graph)
    return [*path[path.index(node) :], node]


Step = Callable[[FlowResult], FlowResult]


class WaveRunner:
    """Runs steps wave by wave; the steps of one wave run concurrently.

    Args:
        waves: from :func:`plan_waves`.
        steps: the callable of each step, by name.
        depends_on: each step's dependencies (to skip steps whose dependencies all skipped).
        optional: steps that run only once activated.
        max_concurrent: at most this many steps run at the same time (None: no cap).
        network: the name of the network the steps are the tasks of, for errors.

    Raises:
        ConfigError: more steps than the global ``max_iterations`` robots one network run may
            start (so a run is refused before any of them starts).
    """

    def __init__(
        self,
        waves: list[list[str]],
        steps: Mapping[str, Step],
        depends_on: Mapping[str, Sequence[str]],
        optional: Iterable[str] = (),
        max_concurrent: int | None = None,
        network: str = "",
    ) -> None:
        bound = global_config().max_iterations
        if bound is not None and len(steps) > bound:
            raise ConfigError(
                f"network '{network}' has {len(steps)} tasks, more than the {bound} robots "
                "max_iterations lets one network run start; raise max_iterations (null: no bound)"
            )
        self._waves = waves
        self._steps = steps
        self._depends_on = depends_on
        self._optional = set(optional)
        self._gate = threading.BoundedSemaphore(max_concurrent) if max_concurrent else None

    def run(self, initial: FlowResult) -> FlowResult:
        """Run every wave from ``initial``; stop at the first halted result."""
        current = initial
        ran: set[str] = set()
        for wave in self._waves:
            names = [n for n in wave if self._should_run(n, current, ran)]
            if not names:
                continue
            results = self._run_wave(names, current)
            ran.update(names)
            halted = next((r for r in results if r.halted), None)
            if halted is not None:
                return halted
            current = _merge(current, results)
        return current

    def _should_run(self, name: str, current: FlowResult, ran: set[str]) -> bool:
        # An optional step waits for activation; any step whose dependencies were all skipped
        # is skipped too, so a chain behind an inactive branch stays quiet while a fan-in
        # behind several branches runs after whichever ran.
        if name in self._optional and name not in current.activated_steps:
            return False
        deps = self._depends_on.get(name, ())
        return not deps or any(d in ran for d in deps)

    def _run_wave(self, names: list[str], current: FlowResult) -> list[FlowResult]:
        if len(names) == 1:
            return [self._call(names[0], current)]
        with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="wave") as pool:
            futures = [pool.submit(self._call, name, current) for name in names]
            return [f.result() for f in futures]

    def _call(self, name: str, current: FlowResult) -> FlowResult:
        if self._gate is None:
            return self._steps[name](current)
        with self._gate:
            return self._steps[name](current)


def _merge(base: FlowResult, results: list[FlowResult]) -> FlowResult:
    """One result from a wave's: contexts dict-merged in wave order, errors and activations
    gathered, the value of the last step."""
    if len(results) == 1:
        return results[0]
    context: dict[str, Any] = {}
    errors = {k: list(v) for k, v in base.errors.items()}
    activated = list(base.activated_steps)
    for result in results:
        context.update(result.context)
        for key, messages in result.errors.items():
            errors.setdefault(key, []).extend(messages[len(base.errors.get(key, ())) :])
        activated.extend(a for a in result.activated_steps if a not in activated)
    return FlowResult(
        value=results[-1].value,
        context=context,
        errors={k: tuple(v) for k, v in errors.items()},
        activated_steps=tuple(activated),
    )
