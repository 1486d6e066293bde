"""What the web console shows, read through the admin requests the CLIs use (``ps``, ``dlq.list``,
``stats``, ``traffic``) and acted on through the client's own ``replay``: one
:class:`BusClient`, so the console is a member of the bus like ``robotlab ps`` is, with its own
name and key. A robot's recent runs are asked of the robot itself (``robot.runs``), as
``robotlab runs NAME`` does.

Synchronous: ``app.py`` runs these calls on worker threads. A view is plain JSON-ready data,
split into sections so a stream can push only the sections that changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from robotlab.bus import BusClient
from robotlab.bus.wire.protocol import unpack
from robotlab.errors import BusError
from robotlab.robot.recent_runs import ask_runs

from .flow import Flow

if TYPE_CHECKING:
    from .desk import WebDesk

RUNS_TIMEOUT = 10.0
"""Seconds the console waits for a robot's runs (a robot answers between messages)."""
LETTERS_SHOWN = 200
"""The newest dead letters the console shows; the traffic's ``dlq_size`` counts them all, and
``robotlab dlq list`` lists them all. Looked at every second, a queue of thousands listed whole
would take the broker's loop tens of milliseconds each time."""
SECTIONS = ("members", "dlq", "traffic", "messages", "desk")
"""The parts of a view, each pushed as its own event when it changes (``desk`` only with
``--human``)."""
TRAFFIC = ("routed", "delivered", "nacked", "timeouts", "dead_lettered", "replies_dropped",
           "in_flight", "dlq_size")
"""The broker's counters shown as traffic, beside the messages themselves (``flow.py``)."""


class Console:
    """The crew seen from one bus client: ``view`` to look, ``replay`` to act; with a ``desk``,
    also a person's side of the bus (``robotlab web --human NAME``)."""

    def __init__(self, client: BusClient, timeout: float, desk: WebDesk | None = None) -> None:
        self.client = client
        self.timeout = timeout
        self.desk = desk
        self.flow = Flow()

    def view(self) -> dict[str, Any]:
        """Members (every peer, robots first), dead letters (oldest first), the broker's
        counters, the latest messages routed, and her desk when there is one."""
        members = [member_row(row) for row in self.client.admin("ps", all=True)]
        letters = [letter_row(row)
                   for row in self.client.admin("dlq.list", newest=LETTERS_SHOWN)]
        stats = self.client.admin("stats")
        shown = {"members": members, "dlq": letters,
                 "traffic": {key: stats.get(key, 0) for key in TRAFFIC},
                 "messages": self.flow.look(self.client)}
        return shown if self.desk is None else {**shown, "desk": self.desk.view()}

    def replay(self, dlq_id: str, force: bool) -> dict[str, Any]:
        """Route a dead letter again, as ``robotlab dlq replay [--force]`` does.

        Returns ``{"ok": True, "delivered_to": [...]}``, or ``{"ok": False, "error": line}`` when
        the broker refuses it (a letter that may have run, without ``force``) or it fails again.
        """
        try:
            tracker = self.client.replay(dlq_id, force=force).wait(self.timeout)
        except BusError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "dlq_id": dlq_id,
                "delivered_to": list(tracker.instances) or [tracker.to]}

    def runs(self, name: str, last: int) -> dict[str, Any]:
        """The robot ``name``'s last ``last`` runs, as ``robotlab runs NAME`` shows them.

        Returns ``{"ok": True, "name": name, "runs": [...]}`` (newest first), or ``{"ok": False,
        "error": line}`` when there is no such robot, it keeps no record, or it did not answer.
        """
        try:
            return {"ok": True, "name": name,
                    "runs": ask_runs(self.client, name, last, RUNS_TIMEOUT)}
        except BusError as exc:
            return {"ok": False, "name": name, "error": str(exc)}


def member_row(row: dict[str, Any]) -> dict[str, Any]:
    """One ``ps`` row without its uptime.

    The uptime changes every look, and would make every look a change.
    """
    return {key: value for key, value in row.items() if key != "uptime"}


def letter_row(row: dict[str, Any]) -> dict[str, Any]:
    """One ``dlq.list`` row with its msgpack body decoded as ``content``."""
    body = row.get("body")
    shown = {key: value for key, value in row.items() if key not in ("body", "body_bytes")}
    if body is None and row.get("body_bytes"):
        shown["content"] = f"<{row['body_bytes']} bytes, too large to list>"
        return shown
    body = body or b""
    try:
        shown["content"] = unpack(body) if body else None
    except Exception:
        shown["content"] = f"<{len(body)} undecodable bytes>"
    return shown


def changes(before: dict[str, Any] | None, now: dict[str, Any]) -> list[tuple[str, Any]]:
    """The sections of ``now`` that differ from ``before`` (all of them when there is no before)."""
    return [(section, now[section]) for section in SECTIONS
            if section in now and (before is None or before.get(section) != now[section])]
