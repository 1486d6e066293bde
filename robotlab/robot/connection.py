"""A robot's connection to the bus.

Joining a broker URL, a ``BusClient`` or an embedded broker, and leaving.

The connection belongs to the robot's :class:`~robotlab.robot.messaging.RobotBus`
(``robot.messaging.connection``), with the services it runs for the robot on that bus: the
network task server and the budget its spawned robots draw on.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from typing import Any, Protocol

from robotlab.bus import BusClient, EmbeddedBroker
from robotlab.errors import BusError, ConfigError
from robotlab.robot.remote_tasks import TaskServer
from robotlab.robot.requests import runs_the_model


class BusOwner(Protocol):
    """What the bus side uses of its robot (``Robot`` is one): its name and ``run``."""

    name: str

    def run(self, message: Any = None, **kwargs: Any) -> Any:
        """Run the robot on ``message``."""


class BusConnection:
    """One robot's connection: its ``BusClient`` (its own, or one it adopted), the broker it started
    inside this process when it named none, and the services it serves on that bus.

    Args:
        robot: the robot it belongs to (its ``name``; the task server runs it).
        handler: the client's inbound handler, in its two-argument form.
        bus: what the robot was given as ``bus=``, joined by :meth:`join_configured`.
    """

    def __init__(self, robot: BusOwner, handler: Callable[..., Any], bus: Any = None) -> None:
        self.robot = robot
        self._handler = handler
        self.client: BusClient | None = None
        self._owns_client = False
        self._embedded: EmbeddedBroker | None = None
        self._embedded_dir: str | None = None
        self._task_server: TaskServer | None = None
        self.budget_service: Any = None
        """This robot's budget, served to the robots it spawned
        (``robotlab/robot/shared_budget.py``)."""
        self.configured = bus
        self._inline = False

    @property
    def inline(self) -> bool:
        """Whether the handler runs on the client's I/O thread (:func:`robotlab.bus.inline`)."""
        return self._inline

    @inline.setter
    def inline(self, value: bool) -> None:
        self._inline = value
        if self.client is not None:
            self.client.on_message(self._handler, manual=True, inline=value)

    def join_configured(self) -> None:
        """Join what ``bus=`` named when it is a broker URL, a ``BusClient`` or an
        ``EmbeddedBroker``; anything else is only remembered."""
        if isinstance(self.configured, (str, BusClient, EmbeddedBroker)):
            self.join(self.configured)

    @property
    def name(self) -> str:
        return self.robot.name

    @property
    def bus(self) -> Any:
        """The joined ``BusClient``, else what ``bus=`` was given (None when nothing)."""
        return self.client if self.client is not None else self.configured

    def join(self, bus: Any = None, *, timeout: float = 10.0) -> None:
        """Join ``bus`` (a broker URL, a ``BusClient`` or an ``EmbeddedBroker``).

        With no argument: stay on the current bus, or start a broker inside this process (on an
        ``ipc://`` path, so spawned robots in other processes reach it). A ``BusClient`` named
        like the robot is adopted as its connection; otherwise the robot connects under its own
        name. Joining another bus leaves the current one first.

        Raises:
            PeerUnavailable: no broker answered within ``timeout``.
        """
        if bus is None and self.client is not None:
            return
        if self.client is not None and (bus is self.client or _url_of(bus) == self.client.url):
            return
        self.leave()
        if bus is None:
            self._embedded_dir = tempfile.mkdtemp(prefix="rl-")
            self._embedded = EmbeddedBroker(url=f"ipc://{self._embedded_dir}/bus.sock").start()
            bus = self._embedded
        self._connect(bus, timeout)

    def _connect(self, bus: Any, timeout: float) -> None:
        if isinstance(bus, BusClient) and bus.name == self.name:
            client, owned = bus, False
        elif isinstance(bus, (BusClient, EmbeddedBroker)):
            client, owned = BusClient(bus.url, name=self.name, role="robot",
                                      context=_context_of(bus), keys=_keys_of(bus)), True
        elif isinstance(bus, str):
            client, owned = BusClient(bus, name=self.name, role="robot"), True
        else:
            raise ConfigError(f"robot '{self.name}': a bus is a broker URL, a BusClient or an "
                              f"EmbeddedBroker, not {type(bus).__name__}")
        client.on_message(self._handler, manual=True, inline=self._inline)
        client.dispatcher.not_inline = runs_the_model  # never the model on the I/O thread
        self.client, self._owns_client = client, owned
        if owned:
            try:
                client.start(timeout)
            except Exception:
                self.leave()
                raise

    def leave(self) -> None:
        """Leave the bus (closing this robot's own connection and broker, if it started them)."""
        client, self.client = self.client, None
        if client is not None and self._owns_client:
            client.close()
        for service in (self._task_server, self.budget_service):
            if service is not None:
                service.close()
        self._task_server = self.budget_service = None
        if self._embedded is not None:
            self._embedded.stop()
            self._embedded = None
        if self._embedded_dir is not None:
            shutil.rmtree(self._embedded_dir, ignore_errors=True)
            self._embedded_dir = None
        if client is not None:
            self.configured = None

    def require_client(self) -> BusClient:
        """The joined client.

        Raises:
            BusError: the robot has no bus.
        """
        if self.client is None:
            raise BusError(f"No bus configured on robot '{self.name}'")
        return self.client

    def task_server(self) -> TaskServer:
        """The server of network tasks sent to this robot (made on first use)."""
        if self._task_server is None:
            self._task_server = TaskServer(self.robot, self.require_client().url)
        return self._task_server


def _url_of(bus: Any) -> str | None:
    if isinstance(bus, str):
        return bus
    return getattr(bus, "url", None) if isinstance(bus, (BusClient, EmbeddedBroker)) else None


def _keys_of(bus: Any) -> Any:
    """The CURVE keys to join ``bus`` with: a client's own, none for a keyless embedded broker."""
    if isinstance(bus, EmbeddedBroker):
        return None if bus.config.keys_dir else False
    return bus.keys or False


def _context_of(bus: Any) -> Any:
    """The zmq context to share: required for ``inproc://``, harmless otherwise."""
    if isinstance(bus, EmbeddedBroker):
        return bus.context
    if not bus.url.startswith("inproc://"):
        return None
    return getattr(getattr(bus, "_link", None), "context", None)
