"""Choosing the run's eval: an object with ``score``, a callable, a registered name, or a
bundled strategy (``code``, ``null``, ``prose``).

Registered evals live in an explicit ``EvalRegistry`` object; ``robotlab.to`` owns the one
its ``register_eval`` and ``run`` use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from robotlab.errors import ConfigError
from robotlab.process_groups import Supervisor
from robotlab.to.config import RobotToSettings
from robotlab.to.evals.code import CodeEval
from robotlab.to.evals.null import NullEval
from robotlab.to.evals.prose import Judge, ProseEval
from robotlab.to.evals.score import Context, Eval, Score

Factory = Callable[[RobotToSettings], Any]
BUNDLED = ("code", "null", "prose")


class CallableEval(Eval):
    """A plain function ``fn(context) -> Score`` used as an eval."""

    def __init__(self, fn: Callable[[Context], Score]) -> None:
        self.fn = fn

    def score(self, context: Context) -> Score:
        """Call the function."""
        return self.fn(context)


class EvalRegistry:
    """Named eval factories: ``factory(settings) -> eval object``."""

    def __init__(self) -> None:
        self.factories: dict[str, Factory] = {}

    def register(self, name: str, factory: Factory) -> None:
        """Make ``name`` usable as ``eval=name`` (and ``--eval name`` from the API's caller)."""
        if name in BUNDLED:
            raise ConfigError(f"{name!r} is a bundled eval and cannot be replaced")
        self.factories[name] = factory


def _bundled(name: str, settings: RobotToSettings, judge: Judge, supervisor: Supervisor) -> Eval:
    if name == "null":
        return NullEval()
    if name == "prose":
        return ProseEval(judge, settings.eval_spec, settings.eval_floor, settings.verify_timeout,
                         supervisor)
    return CodeEval(
        settings.verify_command, settings.eval_measure, settings.eval_target,
        settings.verify_timeout, supervisor,
    )


def _default_name(settings: RobotToSettings) -> str:
    verify = settings.verify_command and settings.verify_command.strip()
    return "code" if verify or settings.eval_measure or settings.eval_target is not None else "null"


def build(settings: RobotToSettings, registry: EvalRegistry, judge: Judge,
          supervisor: Supervisor) -> Any:
    """The eval of a run, built once (a custom eval keeps its state across iterations).

    Raises:
        ConfigError: an unknown name.
    """
    choice = settings.eval
    if choice is not None and hasattr(choice, "score"):
        return choice
    if callable(choice):
        return CallableEval(choice)
    name = _default_name(settings) if choice is None else str(choice)
    if name in registry.factories:
        return registry.factories[name](settings)
    if name in BUNDLED:
        return _bundled(name, settings, judge, supervisor)
    known = ", ".join([*BUNDLED, *registry.factories])
    raise ConfigError(f"unknown eval strategy: {name} (known: {known})")


def is_scored(evaluator: Any, settings: RobotToSettings) -> bool:
    """Whether the prompt carries score feedback for this eval."""
    return bool(getattr(evaluator, "scored", False)) or settings.eval_spec is not None
