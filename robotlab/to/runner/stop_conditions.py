"""The run's limits, checked before and after each iteration; each raises StopRun(reason).

A limit the user set (iterations, tokens, plateau) is a stop: exit code 0. Too many
consecutive failures is an abort: exit code 1.
"""

from __future__ import annotations

from robotlab.errors import RunExit, StopRun
from robotlab.to.config import RobotToSettings
from robotlab.to.runner.state import Run


def check_target(run: Run, settings: RobotToSettings) -> None:
    """Stop before any iteration when the best score (the base's, at first) meets ``--target``."""
    best, target = run.best_score_value, settings.eval_target
    if best is not None and target is not None and best >= target:
        raise StopRun(f"target met: the score {best:g} already meets the target {target:g}")


def check_limits(run: Run, settings: RobotToSettings) -> None:
    """Max iterations, then max tokens (the pre-check of every pass)."""
    if settings.max_iterations is not None and run.iteration >= settings.max_iterations:
        raise StopRun(f"max iterations reached ({settings.max_iterations})")
    if settings.max_tokens is not None and run.total_tokens >= settings.max_tokens:
        raise StopRun(f"max tokens reached ({settings.max_tokens})")
    if _cost_spent(run, settings):
        raise StopRun(f"max cost reached (${settings.max_cost:g})")


def check_after(run: Run, settings: RobotToSettings) -> None:
    """Limits, then consecutive failures, then plateau (the post-check of every pass)."""
    check_limits(run, settings)
    if run.consecutive_failures >= settings.max_consecutive_failures:
        raise StopRun(f"{run.consecutive_failures} consecutive failures", exit_code=RunExit.ABORTED)
    plateau = settings.stop_on_plateau
    if plateau is not None and run.iterations_since_improvement >= plateau:
        raise StopRun(f"plateau: {run.iterations_since_improvement} iterations without improvement")


def budget_spent(run: Run, settings: RobotToSettings) -> bool:
    """True once the token or cost budget is used up (then no nudge or repair is started)."""
    if settings.max_tokens is not None and run.total_tokens >= settings.max_tokens:
        return True
    return _cost_spent(run, settings)


def _cost_spent(run: Run, settings: RobotToSettings) -> bool:
    """True once a known cost has reached ``--max-cost``."""
    limit = settings.max_cost
    return limit is not None and run.cost_usd is not None and run.cost_usd >= limit
