"""Network tasks run by a robot in another process: the request's wire shape and both its ends.

A network reaches a member in another process (a spawn handle, a robot on the broker) with a
``network.task`` request: a :class:`BusMember` sends it (:func:`task_content`), the member's
:class:`TaskServer` runs it, and :func:`result_from_reply` turns the reply back into a result.
It lives beside the robot (not the network) because the robot's serve loop answers it.
"""

from __future__ import annotations

from typing import Any

from robotlab.config.run_config import RunConfig
from robotlab.errors import RemoteError
from robotlab.memory.remote import RemoteMemory
from robotlab.robot.result import RobotResult
from robotlab.robot.served_task import run_fitting

__all__ = ["DEFAULT_TASK_TIMEOUT", "TASK_TYPE", "BusMember", "TaskServer", "is_network_task",
           "result_from_reply", "task_content"]

TASK_TYPE = "network.task"
"""The message type a network sends to run one task on a member in another process."""

DEFAULT_TASK_TIMEOUT = 600.0
"""Seconds a network waits for a remote member's result (an LLM run can be long)."""


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
            result = run_fitting(self.robot, content.get("message"), **self._run_kwargs(content))
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
