"""Robot pools: N instances of one robot, each a spawned robotd, under one bus name.

The Python counterpart of the Ruby gem's Ractor worker pool and scheduler (spec 21): a
Ractor becomes a process. Every request to the pool is sent with ``any`` routing (the broker
hands it to one live instance, load-balanced) and flagged idempotent, so when a member dies
with the request in hand the broker redelivers it to another member; what cannot be
redelivered comes back as that item's error. ``map`` runs many messages with at most
``concurrency`` in flight; one failing item never stops the others.

A pool is a network member (``net.task("review", pool)``): a network task sent to it runs on
one member, with the network's memory served on the bus as for any remote robot.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from robotlab.errors import ConfigError, RobotlabError
from robotlab.robot.remote_tasks import DEFAULT_TASK_TIMEOUT
from robotlab.robot.result import RobotResult
from robotlab.robot.spawn import RemoteRobot, SpawnHandle, spawn

__all__ = ["RobotPool"]


class RobotPool(RemoteRobot):
    """``size`` spawned instances of robot ``name``, reached as one.

    Args:
        parent: the robot that spawns the members (and whose bus connection is used).
        name: the members' bus name.
        size: how many members to start.
        concurrency: the default cap on requests in flight in ``map`` (default: ``size``).
        timeout: seconds one request may take.
        spawn_options: ``system_prompt``, ``template``, ``model``... as for ``Robot.spawn``.

    Raises:
        ConfigError: ``size`` is not a positive integer, or a member refused its settings.
    """

    def __init__(self, parent: Any, name: str, size: int, *, concurrency: int | None = None,
                 timeout: float = DEFAULT_TASK_TIMEOUT, **spawn_options: Any) -> None:
        if not isinstance(size, int) or size < 1:
            raise ConfigError(f"a pool needs a size of 1 or more members, got {size!r}")
        super().__init__(name, parent, timeout=timeout)
        self.size = size
        self.concurrency = _cap(concurrency or size)
        self.members: list[SpawnHandle] = []
        try:
            for _ in range(size):
                self.members.append(spawn(parent, name, **spawn_options))
        except BaseException:
            self.stop()
            raise

    def _request(self, type: str, content: Any, timeout: float) -> Any:
        return self.bus.request(self.name, content, timeout=timeout, type=type, any=True,
                                idempotent=True)

    def map(self, messages: Iterable[Any], *, concurrency: int | None = None,
            timeout: float | None = None) -> list[RobotResult | RobotlabError]:
        """Run every message on some member, at most ``concurrency`` at a time.

        Returns:
            one entry per message, in order: its ``RobotResult``, or the ``RobotlabError``
            (``RemoteError``, ``DeliveryFailed``, ``ReplyTimeout``...) that ended it.
        """
        items = list(messages)
        cap = _cap(concurrency or self.concurrency)

        def one(message: Any) -> RobotResult | RobotlabError:
            try:
                return self.run(message, timeout=timeout)
            except RobotlabError as exc:
                return exc

        with ThreadPoolExecutor(max_workers=min(cap, max(len(items), 1)),
                                thread_name_prefix=f"pool-{self.name}") as ex:
            return list(ex.map(one, items))

    def alive(self) -> list[SpawnHandle]:
        """The members whose processes still run."""
        return [member for member in self.members if member.alive()]

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop every member; True when all are gone."""
        return all([member.stop(timeout) for member in self.members])

    def __enter__(self) -> RobotPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<RobotPool {self.name!r} size={self.size} alive={len(self.alive())}>"


def _cap(value: Any) -> int:
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"pool concurrency must be a positive integer, got {value!r}")
    return value
