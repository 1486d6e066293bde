"""The requests a robot on the bus answers besides robot messages: run, info, runs, network task.

``robot.run`` (``{"message", "kwargs"}``) comes from spawn handles and delegation and answers
``RobotResult.to_dict()``; ``network.task`` comes from a network (answered by a
:class:`~robotlab.robot.remote_tasks.TaskServer`). Both need the robot to serve. An error raised
by the run travels back as ``{"error": {"type", "message"}}`` and is raised again on the
asking side as :class:`~robotlab.errors.RemoteError`. ``robot.info`` describes the robot;
``robot.runs`` lists its recent runs (``robotlab/robot/recent_runs.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from robotlab.errors import ConfigError
from robotlab.robot.recent_runs import RUNS_TYPE, answer_runs
from robotlab.robot.remote_tasks import TASK_TYPE
from robotlab.robot.served_task import run_fitting

if TYPE_CHECKING:
    from robotlab.bus import Message

__all__ = ["INFO_TYPE", "RUNS_TYPE", "RUN_TYPE", "answer_request", "is_request", "runs_the_model"]

RUN_TYPE = "robot.run"
"""A request to run the robot: ``{"message": ..., "kwargs": {...}}``."""

INFO_TYPE = "robot.info"
"""A request for the robot's name, model, provider, api_base, template and parent."""


def is_request(message: Message) -> bool:
    """True for the request types answered by :func:`answer_request`."""
    return message.type in _ANSWERS


def runs_the_model(message: Message) -> bool:
    """True for the requests whose answer runs the robot (a run, a network task)."""
    return message.type == RUN_TYPE or message.type == TASK_TYPE


def answer_request(robot: Any, message: Message) -> Any:
    """The reply content for ``message`` (plain data)."""
    return _ANSWERS[message.type](robot, message.content)


def _run(robot: Any, content: Any) -> dict[str, Any]:
    if not robot.messaging.serving:
        return _error(ConfigError(f"robot '{robot.name}' does not serve run requests "
                                  "(call serve())"))
    content = content if isinstance(content, dict) else {"message": content}
    try:
        result = run_fitting(robot, content.get("message"), **dict(content.get("kwargs") or {}))
    except Exception as error:
        # The boundary for a robot serving another process: the error goes back as data.
        return _error(error)
    return result.to_dict()


def _network_task(robot: Any, content: Any) -> dict[str, Any]:
    if not robot.messaging.serving:
        return _error(ConfigError(f"robot '{robot.name}' does not serve network tasks "
                                  "(call serve())"))
    task = content if isinstance(content, dict) else {"message": content}
    return robot.messaging.task_server().handle(task)


def _info(robot: Any, content: Any) -> dict[str, Any]:
    return {
        "name": robot.name, "model": robot.model, "provider": robot.provider,
        "api_base": robot.config.api_base, "template": robot.template,
        "system_prompt": robot.system_prompt, "serving": robot.messaging.serving,
    }


def _error(error: BaseException) -> dict[str, Any]:
    return {"error": {"type": type(error).__name__, "message": str(error)}}


_ANSWERS = {RUN_TYPE: _run, TASK_TYPE: _network_task, INFO_TYPE: _info, RUNS_TYPE: answer_runs}
