"""Network members wherever they run: a local robot, a spawn handle, or a robot on the broker.

A task's member is anything with a ``name`` and ``run(message, **kw) -> RobotResult``
(:class:`~robotlab.network.task.Member`). A local ``Robot`` and a ``spawn`` handle are members
as they are; a robot *name* becomes a :class:`~robotlab.robot.remote_tasks.BusMember`, which
sends the task over the bus as one request and waits for the result (both ends of that request
live in ``robotlab/robot/remote_tasks.py``).
"""

from __future__ import annotations

from typing import Any

from robotlab.errors import ConfigError
from robotlab.network.task import NetworkView
from robotlab.robot.remote_tasks import BusMember

__all__ = ["BusMember", "resolve_member"]

def resolve_member(robot: Any, network: NetworkView, task_name: str) -> Any:
    """The member a task runs: ``robot`` itself, a member added by name, or a robot on the bus.

    Raises:
        ConfigError: ``robot`` is not a member, or names a robot the network cannot reach.
    """
    if isinstance(robot, str):
        known = network.robots.get(robot)
        if known is not None and not isinstance(known, str):
            return known
        if network.bus is None:
            raise ConfigError(
                f"Task '{task_name}' names robot '{robot}', which is not in network "
                f"'{network.name}' (add_robot it, or give the network a bus to reach it)"
            )
        return BusMember(robot, network.bus)
    if (not isinstance(getattr(robot, "name", None), str)
            or not callable(getattr(robot, "run", None))):
        raise ConfigError(
            f"Task '{task_name}' in network '{network.name}' needs a robot, a spawn handle or a "
            f"robot name, not {type(robot).__name__}"
        )
    return robot
