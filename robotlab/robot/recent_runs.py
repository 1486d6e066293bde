"""A robot's recent runs.

They are kept by a hook as they happen, and asked for over the bus (``robot.runs``).

robotd registers a :class:`RecentRuns` on the robot it hosts, so ``robotlab runs NAME`` and the
web console can show what a robot did (its prompt, each tool call with its arguments and
result, its final words, tokens, dollars and seconds) without reading its robotd's disk. Texts
are trimmed, and only the last :data:`KEPT` runs are kept: the record is for looking at, not
the conversation log (``--history-file`` keeps that whole).

A robot answers ``robot.runs`` between messages, on its one handler thread, like every request.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from robotlab.bus import BusClient
from robotlab.errors import BusError, ConfigError, ReplyTimeout
from robotlab.hooks.hooks import Hook, RunHookContext

__all__ = ["KEPT", "RUNS_TYPE", "RecentRuns", "ask_runs", "answer_runs", "trim"]

RUNS_TYPE = "robot.runs"
"""A request for the robot's recent runs: ``{"last": N}``, answered ``{"runs": [...]}`` (newest
first)."""
KEPT = 20
"""Runs a robot keeps."""
TEXT_LIMIT = 2000
"""Characters kept of a prompt or a reply."""
TOOL_LIMIT = 500
"""Characters kept of a tool call's arguments (as JSON) or its result."""


def trim(text: Any, limit: int) -> str | None:
    """``text`` as a string cut to ``limit`` characters, saying how much was cut.

    None stays None.
    """
    if text is None:
        return None
    text = text if isinstance(text, str) else json.dumps(text, default=str)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


class RecentRuns(Hook):
    """The last :data:`KEPT` runs of one robot, each recorded as it starts and completed as it ends.

    Args:
        priced: whether the robot's model has a price; without one a run's dollars are
            ``"unknown"``, never a made-up 0 (robotd's :class:`RobotStats` knows).
    """

    namespace = "recent_runs"

    def __init__(self, priced: Callable[[], bool] | None = None) -> None:
        self._runs: deque[dict[str, Any]] = deque(maxlen=KEPT)
        self._priced = priced
        self._lock = threading.Lock()

    @classmethod
    def of(cls, robot: Any, priced: Callable[[], bool] | None = None) -> RecentRuns:
        """A record of ``robot``'s runs, registered on it."""
        kept = cls(priced)
        robot.on(kept)
        return kept

    def before_run(self, ctx: RunHookContext) -> None:
        """A run starts: kept at once as running, so a look during it shows its prompt."""
        record = {"started": round(time.time(), 3), "status": "running",
                  "prompt": trim(ctx.request, TEXT_LIMIT), "tool_calls": [], "reply": None,
                  "tokens_in": 0, "tokens_out": 0, "cost": 0.0, "seconds": None, "error": None}
        ctx.local.record = record
        ctx.local.clock = time.monotonic()
        with self._lock:
            self._runs.append(record)

    def after_run(self, ctx: RunHookContext) -> None:
        """A run ended: its tool calls, final words and what it spent."""
        result = ctx.response
        calls = [{"name": call.get("name"), "arguments": trim(call.get("arguments"), TOOL_LIMIT),
                  "result": trim(call.get("result"), TOOL_LIMIT)}
                 for call in getattr(result, "tool_calls", None) or []]
        cost: float | str = float(getattr(result, "cost", 0.0) or 0.0)
        if not cost and self._priced is not None and not self._priced():
            cost = "unknown"
        self._end(ctx, status="done", reply=trim(getattr(result, "reply", None), TEXT_LIMIT),
                  tool_calls=calls,
                  tokens_in=int(getattr(result, "input_tokens", 0) or 0),
                  tokens_out=int(getattr(result, "output_tokens", 0) or 0), cost=cost)

    def on_run_error(self, ctx: RunHookContext) -> None:
        """A run failed: what it raised (its spending is not known here)."""
        error = ctx.error
        self._end(ctx, status="failed", error=trim(f"{type(error).__name__}: {error}", TEXT_LIMIT))

    def _end(self, ctx: RunHookContext, **fields: Any) -> None:
        record = getattr(ctx.local, "record", None)
        if record is None:  # registered in the middle of this run
            return
        with self._lock:
            record.update(fields, seconds=round(time.monotonic() - ctx.local.clock, 3))

    def read(self, last: int = KEPT) -> list[dict[str, Any]]:
        """The last ``last`` runs, newest first, as plain data.

        They are copies: safe to send while runs go on.
        """
        with self._lock:
            runs = list(self._runs)[-last:] if last > 0 else []
            return [{**run, "tool_calls": [dict(call) for call in run["tool_calls"]]}
                    for run in reversed(runs)]


def answer_runs(robot: Any, content: Any) -> dict[str, Any]:
    """The reply to ``robot.runs``: ``{"runs": [...]}``.

    An error when the robot keeps no record.
    """
    kept = next((handler for handler in robot.hooks.handlers()
                 if isinstance(handler, RecentRuns)), None)
    if kept is None:
        error = ConfigError(f"robot '{robot.name}' keeps no record of its runs (a robot hosted by "
                            "robotd does)")
        return {"error": {"type": type(error).__name__, "message": str(error)}}
    last = content.get("last", KEPT) if isinstance(content, dict) else KEPT
    return {"runs": kept.read(last if isinstance(last, int) else KEPT)}


def ask_runs(client: BusClient, name: str, last: int, timeout: float) -> list[dict[str, Any]]:
    """The last ``last`` runs of the robot ``name`` (newest first), asked over ``client``'s bus.

    Raises:
        BusError: nothing of that name is on the bus, it is not a robot, or it keeps no record.
        ReplyTimeout: it did not answer within ``timeout`` (a robot answers between messages).
        PeerUnavailable: the broker did not answer.
    """
    rows = [row for row in client.admin("ps", all=True) if row.get("name") == name]
    if not rows:
        raise BusError(f"no robot named {name!r} is on the bus at {client.url} "
                       "(`robotlab ps` lists the robots)")
    if all(row.get("role") != "robot" for row in rows):
        raise BusError(f"{name!r} is a {rows[0].get('role')}, not a robot: only robots keep runs")
    try:
        content = client.request(name, {"last": last}, type=RUNS_TYPE, timeout=timeout).content
    except ReplyTimeout as exc:
        raise ReplyTimeout(f"{name} did not answer within {timeout:g}s: a robot answers between "
                           "messages, so one in a long run answers when it ends (try a longer "
                           "--timeout)",
                           delivery=exc.delivery) from exc
    if not isinstance(content, dict) or "runs" not in content:
        error = content.get("error") if isinstance(content, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        raise BusError(message or f"{name} keeps no record of its runs "
                                  f"(it answered {trim(content, 80)})")
    return list(content["runs"])
