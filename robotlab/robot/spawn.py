"""``Robot.spawn``: a child robot in its own robotd process, forked from a warm fork server.

Read ``docs/spawn.md``. The first spawn in a process starts the fork server
(``python -m robotlab.robotd.forkserver``: a process, not an import, so ``robotlab`` still
imports nothing from ``robotlab.robotd``); later spawns only ask it to fork. The child joins
the parent's broker, serves, and stops when the spawning process exits unless ``detach=True``.

The fork server's client is ``forking.py``'s; its functions are importable from here too.

The parent talks to a child through a :class:`SpawnHandle` (``run``, ``ask``, ``send_message``,
``info``, ``stop``); a :class:`RemoteRobot` reaches any serving robot by name the same way.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from typing import Any

from robotlab.bus import to_plain
from robotlab.bus.config import check_name
from robotlab.config.model_settings import ModelSettings
from robotlab.errors import BoundaryError, ConfigError, PeerUnavailable, RobotlabError
from robotlab.robot.forking import (
    ForkServerClient,
    fork_server,
    start_fork_server,
    stop_fork_server,
    use_fork_server,
)
from robotlab.robot.message import RobotMessage
from robotlab.robot.remote_tasks import (
    DEFAULT_TASK_TIMEOUT,
    TASK_TYPE,
    BusMember,
    result_from_reply,
    task_content,
)
from robotlab.robot.requests import INFO_TYPE, RUN_TYPE
from robotlab.robot.result import RobotResult
from robotlab.robot.shared_budget import budget_service_for

__all__ = [
    "ForkServerClient", "RemoteRobot", "SpawnHandle", "spawn", "start_fork_server",
    "stop_fork_server", "use_fork_server",
]

_INHERITED = ("model", "provider", "api_base")
"""The model fields a child takes from its parent unless spawn names them (see
:func:`_parent_model`)."""


class RemoteRobot(BusMember):
    """A robot serving on the bus under ``name``, reached through robot ``via``'s connection.

    As a network member it is a :class:`~robotlab.robot.remote_tasks.BusMember`: the network serves
    its memory on the bus, and the task runs remotely with that memory.

    Args:
        name: the robot's bus name.
        via: the local robot whose bus connection (and outbox) is used.
        instance: one instance to address; None reaches every robot with that name.
        timeout: seconds ``run`` waits for the result.
    """

    def __init__(self, name: str, via: Any, instance: str | None = None,
                 timeout: float = DEFAULT_TASK_TIMEOUT) -> None:
        self.name = name
        self.via = via
        self.instance = instance
        self.timeout = timeout

    @property
    def bus(self) -> Any:
        """The connection used: ``via``'s, at the time of the call."""
        return self.via.messaging.require_client()

    def run(self, message: Any = None, *, timeout: float | None = None,
            **kwargs: Any) -> RobotResult:
        """Run the remote robot and return its result.

        A network's task runs with its memory.

        Raises:
            RemoteError: the remote run raised (its class name attached).
            BoundaryError: ``message`` or ``kwargs`` cannot cross a process boundary.
            DeliveryFailed, ReplyTimeout: the bus could not get an answer.
        """
        if "network" in kwargs:
            reply = self._request(TASK_TYPE, task_content(message, kwargs), timeout or self.timeout)
        else:
            reply = self._request(RUN_TYPE, {"message": message, "kwargs": kwargs},
                                  timeout or self.timeout)
        return result_from_reply(self.name, reply.content)

    def info(self, timeout: float = 10.0) -> dict[str, Any]:
        """The remote robot's name, model, provider, api_base, template, system prompt, serving."""
        return dict(self._request(INFO_TYPE, None, timeout).content)

    def ask(self, content: Any, timeout: float = 30.0) -> RobotMessage:
        """``via.ask(name, content, timeout)``: the reply, correlated in ``via``'s outbox."""
        return self.via.ask(self.name, content, timeout=timeout)

    def send_message(self, content: Any) -> RobotMessage:
        """``via.send_message(to=name, content=...)``."""
        return self.via.send_message(to=self.name, content=content)

    def _request(self, type: str, content: Any, timeout: float) -> Any:
        client = self.bus
        options = {"to_instance": self.instance} if self.instance else {}
        return client.request(self.name, content, timeout=timeout, type=type, **options)

    def __repr__(self) -> str:
        return f"<RemoteRobot {self.name!r}>"


class SpawnHandle(RemoteRobot):
    """A spawned child: its process id and instance, and the bus calls of :class:`RemoteRobot`."""

    def __init__(self, name: str, via: Any, pid: int, instance: str, detach: bool) -> None:
        super().__init__(name, via, instance)
        self.pid = pid
        self.detach = detach
        self.parent = via.name

    def alive(self) -> bool:
        """True while the child process runs."""
        import psutil

        try:
            return psutil.Process(self.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def stop(self, timeout: float = 10.0) -> bool:
        """SIGTERM the child (it finishes the task in hand and leaves); True once it is gone."""
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() > deadline:
                return False
            threading.Event().wait(0.01)
        return True

    def __repr__(self) -> str:
        return f"<SpawnHandle {self.name!r} pid={self.pid} parent={self.parent!r}>"


def _parent_model(parent: Any) -> dict[str, Any]:
    """The parent's model, provider and server: what its calls use, template and defaults
    applied (the server is a config field, read from the effective config)."""
    return {"model": parent.model, "provider": parent.provider,
            "api_base": parent.config.api_base}


def spawn(parent: Any, name: str = "robot", system_prompt: str | None = None,
          template: str | None = None, **options: Any) -> SpawnHandle:
    """Start ``name`` as its own robotd on ``parent``'s bus and return its handle (``Robot.spawn``).

    Options: ``model``, ``provider``, ``api_base`` (inherited from ``parent`` unless given),
    ``prompts_dir``, ``detach`` (outlive this process), ``timeout`` (seconds to wait until the
    child is on the bus, default 30), and any plain ``Robot`` setting (``temperature``...).

    Raises:
        BoundaryError: ``local_tools`` or a setting cannot cross to the child's process.
        ConfigError: ``name`` is not a robot name (empty, or with spaces), the child refused its
            settings (no such template, unknown provider), or the parent's bus is ``inproc://``
            (unreachable from another process).
        PeerUnavailable: the child did not come up in time.
    """
    check_name(name)  # here, not in the child: a fork for a name the bus would refuse is wasted
    if options.pop("local_tools", None):
        raise BoundaryError("local_tools cannot cross to a spawned process; give the child a "
                            "template whose front matter lists its tools", type_name="Tool",
                            path="local_tools")
    detach = bool(options.pop("detach", False))
    timeout = float(options.pop("timeout", 30.0))
    inherited = _parent_model(parent)
    llm = {key: options.pop(key, inherited[key]) for key in _INHERITED}
    llm.update({key: options.pop(key) for key in ModelSettings.model_fields if key in options})
    robot = {"template": template, "system_prompt": system_prompt,
             "prompts_dir": options.pop("prompts_dir", None), "serve": True,
             "llm": ModelSettings(**llm).set_fields(), "settings": to_plain(options, "settings")}
    # it starts while the parent joins its bus (and starts a broker, if it has none)
    server = fork_server()
    client = parent.with_bus().messaging.require_client()
    service = budget_service_for(parent)
    if service is not None:  # the child draws on this robot's budget (docs/budgets.md)
        robot["shared_budget"] = {"service": service, "owner": parent.name}
    if client.url.startswith("inproc://"):
        raise ConfigError(f"robot '{parent.name}' is on an inproc:// bus, which other processes "
                          "cannot reach; join an ipc:// or tcp:// broker (or let spawn start one: "
                          "with_bus())")
    instance = uuid.uuid4().hex[:12]
    daemon = {"name": name, "broker": client.url, "instance": instance, "parent": parent.name,
              "watch_pid": None if detach else os.getpid(), "connect_timeout": min(timeout, 10.0)}
    # The child joins with exactly its parent's keys (none: {}), handed over in memory.
    daemon["curve"] = client.keys.to_plain() if client.keys is not None else {}
    robot["fork_server"] = server.path
    answer = server.fork({"daemon": daemon, "robot": robot}, timeout)
    if not answer.get("ok"):
        raise _spawn_error(name, answer)
    return SpawnHandle(name, parent, int(answer["pid"]), instance, detach)


def _spawn_error(name: str, answer: dict[str, Any]) -> RobotlabError:
    text = f"spawned robot '{name}' did not start: {answer.get('error', 'no reason given')}"
    kinds = {ConfigError.exit_code: ConfigError, PeerUnavailable.exit_code: PeerUnavailable}
    code = answer.get("exit_code")
    return kinds.get(code, RobotlabError)(text) if isinstance(code, int) else RobotlabError(text)
