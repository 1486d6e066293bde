"""robot-to: an autonomous loop that drives a robot toward an objective on a git branch.

``run(objective, **settings)``, ``resume(run_id, **settings)`` and ``register_eval(name,
factory)`` mirror ``RobotLab::To.run``, ``resume`` and ``register_eval``. Read
``docs/robot-to/`` next.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from robotlab.to.evals.registry import EvalRegistry
from robotlab.to.evals.score import Context, Eval, Score
from robotlab.to.runner.orchestrator import RunReport

__all__ = ["Context", "Eval", "EvalRegistry", "RunReport", "Score", "evals", "register_eval",
           "resume", "run"]

evals = EvalRegistry()
"""The registry ``register_eval`` fills and ``run``/``resume`` read unless given another."""

_LLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx")


def register_eval(name: str, factory: Callable[[Any], Any] | None = None) -> Any:
    """Register ``factory(settings) -> eval`` under ``name`` (usable as a decorator).

    An eval is any object with ``score(context) -> Score``; ``eval=name`` selects it.
    """
    if factory is None:
        return lambda fn: register_eval(name, fn) or fn
    evals.register(name, factory)
    return factory


def _quiet_llm_loggers(debug: bool) -> None:
    for name in _LLM_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.WARNING)


def run(objective: str, *, work_dir: str | None = None, registry: EvalRegistry | None = None,
        streams: Any = None, **settings: Any) -> Any:
    """Run the loop in the git repository at ``work_dir`` (default: the current directory).

    ``settings`` are any robot-to settings (``max_iterations=3``, ``verify_command="pytest -q"``,
    ``eval=MyEval()``...); they override the user file and the environment.

    Returns:
        RunReport: ``exit_code`` (0 stopped by a stop condition, 1 aborted, 2 could not start,
        130 interrupted), ``reason``, the ``run`` state and the printed ``summary``.
    """
    from robotlab.to import config
    from robotlab.to.runner import orchestrator

    streams = streams or orchestrator.Streams()
    try:
        loaded = config.load(settings)
        _quiet_llm_loggers(loaded.debug)
        session = orchestrator.start(objective.strip(), loaded, registry or evals, streams,
                                     work_dir)
    except orchestrator.SETUP_ERRORS as exc:
        return orchestrator.setup_failure(exc, streams)
    except KeyboardInterrupt:
        return orchestrator.interrupted_setup(streams)
    return orchestrator.execute(session, streams)


def resume(run_id: str, *, work_dir: str | None = None, registry: EvalRegistry | None = None,
           streams: Any = None, **settings: Any) -> Any:
    """Continue a paused run on its branch, with its stored settings (``settings`` override
    them)."""
    from robotlab.to.runner import orchestrator

    streams = streams or orchestrator.Streams()
    try:
        session = orchestrator.reopen(run_id, settings, registry or evals, streams, work_dir)
        _quiet_llm_loggers(session.settings.debug)
    except orchestrator.SETUP_ERRORS as exc:
        return orchestrator.setup_failure(exc, streams)
    except KeyboardInterrupt:
        return orchestrator.interrupted_setup(streams)
    return orchestrator.execute(session, streams)
