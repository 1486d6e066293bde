"""Network members wherever they run: a local robot, a spawn handle, or a robot on the broker.

A task's member is anything with a ``name`` and ``run(message, **kw) -> RobotResult``
(:class:`~robotlab.network_task.Member`). A local ``Robot`` and a ``spawn`` handle are members
as they are; a robot *name* becomes a :class:`BusMember`, which sends the task over the bus as
one request (plain data only) and waits for the result.

The other side, in the robot's own process, is :class:`TaskServer`: it turns such a request
into ``robot.run(...)`` with a :class:`~robotlab.memory_remote.RemoteMemory` standing in for
the network's memory, so the robot reads, writes, waits and subscribes there as if it were
local.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from robotlab.errors import ConfigError, RemoteError
from robotlab.memory_remote import RemoteMemory
from robotlab.result import RobotResult
from robotlab.run_config import RunConfig

if TYPE_CHECKING:
    from robotlab.network import Network

__all__ = ["TASK_TYPE", "BusMember", "TaskServer", "is_network_task", "resolve_member"]

TASK_TYPE = "network.task"
"""The bus message type of a task sent by a network to a member."""

DEFAULT_TASK_TIMEOUT = 600.0
"""Seconds a network waits for a remote member's result (an LLM run can be long)."""


def resolve_member(robot: Any, network: Network, task_name: str) -> Any:
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
    if not isinstance(getattr(robot, "name", None), str) or not callable(getattr(robot, "run", None)):
        raise ConfigError(
            f"Task '{task_name}' in network '{network.name}' needs a robot, a spawn handle or a "
            f"robot name, not {type(robot).__name__}"
        )
    return robot


class BusMember:
    """A robot serving on the broker under ``name``, run by sending it the task.

    Args:
        name: the robot's bus name.
        bus: the network's bus client.
        timeout: seconds to wait for the result.
    """

    def __init__(self, name: str, bus: Any, timeout: float = DEFAULT_TASK_TIMEOUT) -> None:
        self.name = name
        self.bus = bus
        self.timeout = timeout

    def run(self, message: Any = None, **kwargs: Any) -> RobotResult:
        """Send the task and return the remote robot's result.

        Raises:
            RemoteError: the remote robot raised (its class name attached).
            DeliveryFailed, ReplyTimeout: the bus could not get an answer.
        """
        content = task_content(message, kwargs)
        reply = self.bus.request(self.name, content, timeout=self.timeout, type=TASK_TYPE)
        return result_from_reply(self.name, reply.content)

    def __repr__(self) -> str:
        return f"<BusMember {self.name!r}>"


def task_content(message: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The plain-data request for a remote member (network objects become names)."""
    kwargs = dict(kwargs)
    network = kwargs.pop("network", None)
    task = kwargs.pop("task", None)
    config = kwargs.pop("network_config", None)
    # The memories stay where they are: the member reaches the network's through its
    # service. A task's memory dict travels, to be written there by the member itself.
    kwargs.pop("network_memory", None)
    if not isinstance(kwargs.get("memory"), dict):
        kwargs.pop("memory", None)
    return {
        "message": message,
        "kwargs": kwargs,
        "task": getattr(task, "name", task),
        "network": getattr(network, "name", network),
        "memory": getattr(network, "memory_service_name", None),
        "network_config": _config_data(config),
    }


def _config_data(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    data = RunConfig.of(config).to_json_dict()
    data.pop("bus", None)
    return data


def result_from_reply(name: str, content: Any) -> RobotResult:
    """Turn a :class:`TaskServer` reply into a result, or raise the remote error."""
    if isinstance(content, dict) and "error" in content:
        error = content["error"] or {}
        raise RemoteError(str(error.get("type", "Error")), str(error.get("message", "")))
    if not isinstance(content, dict):
        return RobotResult(name, reply=None if content is None else str(content))
    return RobotResult.from_dict(content)


def is_network_task(message: Any) -> bool:
    """True for a bus message that a network sent to run a task."""
    return getattr(message, "type", None) == TASK_TYPE


class TaskServer:
    """Runs network tasks for one robot in its own process (called by its serve handler).

    It keeps one :class:`RemoteMemory` per network memory service, so every task of a
    network sees the same memory connection and its subscriptions.

    Args:
        robot: the local robot that runs the tasks.
        broker_url: where the memory services are reached.
    """

    def __init__(self, robot: Any, broker_url: str) -> None:
        self.robot = robot
        self.broker_url = broker_url
        self._memories: dict[str, RemoteMemory] = {}

    def handle(self, content: dict[str, Any]) -> dict[str, Any]:
        """Run one task; the reply is the result as plain data, or ``{"error": {...}}``."""
        try:
            result = self.robot.run(content.get("message"), **self._run_kwargs(content))
        except Exception as error:
            # This is the boundary for the remote robot: the error travels back as data
            # and the network turns it into the step's "Error: <Class>: <message>".
            return {"error": {"type": type(error).__name__, "message": str(error)}}
        return result.to_dict()

    def _run_kwargs(self, content: dict[str, Any]) -> dict[str, Any]:
        kwargs = dict(content.get("kwargs") or {})
        config = content.get("network_config") or {}
        if config:
            kwargs["network_config"] = RunConfig.of(config)
        service = content.get("memory")
        if service:
            kwargs["network_memory"] = self.memory(service, content.get("network"))
        return kwargs

    def memory(self, service: str, network_name: str | None = None) -> RemoteMemory:
        """The remote memory for ``service``, connected on first use."""
        memory = self._memories.get(service)
        if memory is None:
            memory = RemoteMemory.connect(self.broker_url, service, network_name=network_name)
            self._memories[service] = memory
        return memory

    def close(self) -> None:
        """Close every remote memory connection."""
        for memory in self._memories.values():
            memory.close()
        self._memories.clear()
