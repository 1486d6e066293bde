"""The rows ``robotlab ps`` and ``top`` show: the broker's presence rows with each member's own
figures.

The broker's ``ps`` rows carry ``stats``, the map each member reports of itself
(``robotlab.bus.member.heartbeat_stats``): a hosted robot's runs, tokens and dollars since start,
robot-to's iteration and phase. Tokens and dollars are the member's word; the in-flight count
and the age of the oldest delivery are the broker's own.
"""

from __future__ import annotations

from typing import Any

COLUMNS = ["name", "instance", "state", "in_flight", "oldest", "tokens", "cost", "status",
           "delivered", "nacked", "parent", "pid"]
"""The table's columns, in order."""


def with_figures(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` plus ``tokens_in``, ``tokens_out``, ``cost`` and ``status`` lifted from its stats
    (for --json)."""
    stats = row.get("stats") or {}
    lifted = {key: stats[key] for key in ("tokens_in", "tokens_out", "cost", "status", "iteration",
                                          "phase")
              if key in stats}
    return {**row, **lifted}


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """The cells of one member for the table (None shows as ``-``)."""
    stats = row.get("stats") or {}
    return {**row, "tokens": _tokens(stats), "cost": _cost(stats.get("cost")),
            "status": stats.get("status"), "oldest": _age(row.get("oldest"))}


def _tokens(stats: dict[str, Any]) -> str | None:
    if "tokens_in" in stats or "tokens_out" in stats:
        return f"{_int(stats.get('tokens_in')):,} in / {_int(stats.get('tokens_out')):,} out"
    if "tokens" in stats:
        return f"{_int(stats['tokens']):,}"
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _cost(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        # cents, or their fractions
        return f"${value:.4f}" if value >= 0.01 or value == 0 else f"${value:.6f}"
    return str(value)  # "unknown": the model has no price


def _age(seconds: Any) -> str | None:
    if not isinstance(seconds, (int, float)):
        return None
    return f"{seconds:.1f}s" if seconds < 120 else f"{int(seconds) // 60}m {int(seconds) % 60:02d}s"
