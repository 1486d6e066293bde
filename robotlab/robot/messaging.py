"""A robot on the bus: send, reply, handle, serve, ask, with reply correlation in an outbox.

Read ``docs/messaging.md``. ``Robot`` mixes in :class:`BusMethods`; the state lives in one
:class:`RobotBusState` per robot. Each robot joins the bus with its own
:class:`~robotlab.bus.BusClient` under its own name, so deliveries to it are handled in its own
process, on that client's handler thread, one at a time and in order (the fix to the Ruby
original, which ran them inline in the sender).

What arrives is routed by bus message type: ``robot.run`` and ``network.task`` requests (from
spawn handles, delegation and networks) run the robot when it serves; ``robot.info`` describes
it; anything else becomes a :class:`~robotlab.robot.message.RobotMessage` for the handler.
"""

from __future__ import annotations

import inspect
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from robotlab.bus import BusClient, EmbeddedBroker, to_plain
from robotlab.errors import BusError, ConfigError
from robotlab.robot.message import ROBOT_MESSAGE_TYPE, RobotMessage
from robotlab.robot.requests import answer_request, is_request

if TYPE_CHECKING:
    from robotlab.bus import Delivery, Message

__all__ = ["BusMethods", "RobotBusState", "flatten_content"]

RECENT_INBOUND = 1024
"""Inbound messages remembered so a later ``send_reply`` still reaches the exact sender instance."""


class RobotBusState:
    """One robot's bus state: its connection, the counter and outbox under one lock, the handler."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counter = 0
        self.outbox: dict[str, dict[str, Any]] = {}
        self.sent_ids: dict[str, str] = {}
        self.inbound: OrderedDict[str, Message] = OrderedDict()
        self.handler: Callable[..., Any] | None = None
        self.manual = False
        self.serving = False
        self.client: BusClient | None = None
        self.owns_client = False
        self.embedded: EmbeddedBroker | None = None
        self.embedded_dir: str | None = None
        self.task_server: Any = None
        self.budget_service: Any = None

    def next_id(self) -> int:
        """The next message id (call with ``lock`` held)."""
        self.counter += 1
        return self.counter


def flatten_content(content: Any) -> str:
    """What ``serve`` hands to ``run``: a dict becomes ``"k: v"`` lines, anything else its string."""
    if isinstance(content, dict):
        return "\n".join(f"{key}: {value}" for key, value in content.items())
    return "" if content is None else str(content)


def _takes_delivery(handler: Callable[..., Any]) -> bool:
    """True for the two-argument form ``handler(delivery, message)``."""
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    required = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    return len(required) >= 2


class BusMethods:
    """Mixin for ``Robot``: ``send_message``, ``send_reply``, ``on_message``, ``respond_to_tasks``,
    ``serve``, ``ask``, ``with_bus``, ``spawn`` and ``leave_bus``.
    """

    name: str
    bus: Any
    _bus_state: RobotBusState

    def run(self, message: Any = None, **kwargs: Any) -> Any:
        """Implemented by ``Robot``."""
        raise NotImplementedError

    def _init_bus(self, bus: Any) -> None:
        """Called by ``Robot.__init__``: join ``bus`` when it is one (a URL, client or broker)."""
        self._bus_state = RobotBusState()
        self.bus = bus
        if isinstance(bus, (str, BusClient, EmbeddedBroker)):
            self.with_bus(bus)

    # -- readers ---------------------------------------------------------------------------

    @property
    def outbox(self) -> dict[str, dict[str, Any]]:
        """A snapshot of sent messages: key -> ``{"message", "status", "replies", "delivery"}``.

        ``status`` is ``"sent"`` until a reply arrives, then ``"replied"``; ``delivery`` is the
        bus :class:`~robotlab.bus.Tracker` (``.wait(timeout)`` raises if it was not delivered).
        """
        with self._bus_state.lock:
            return {key: {**entry, "replies": list(entry["replies"])} for key, entry in self._bus_state.outbox.items()}

    @property
    def message_counter(self) -> int:
        """The last message id this robot used (0 before the first)."""
        return self._bus_state.counter

    @property
    def serving(self) -> bool:
        """True once ``serve`` or ``respond_to_tasks`` was called."""
        return self._bus_state.serving

    # -- joining ---------------------------------------------------------------------------

    def with_bus(self, bus: Any = None, *, timeout: float = 10.0) -> Any:
        """Join ``bus`` (a broker URL, a ``BusClient`` or an ``EmbeddedBroker``); returns self.

        With no argument: stay on the current bus, or start a broker inside this process (on an
        ``ipc://`` path, so spawned robots in other processes reach it). A ``BusClient`` named
        like the robot is adopted as its connection; otherwise the robot connects under its own
        name. Joining another bus leaves the current one first.

        Raises:
            PeerUnavailable: no broker answered within ``timeout``.
        """
        state = self._bus_state
        if bus is None and state.client is not None:
            return self
        if state.client is not None and (bus is state.client or _url_of(bus) == state.client.url):
            return self
        self.leave_bus()
        if bus is None:
            state.embedded_dir = tempfile.mkdtemp(prefix="rl-")
            state.embedded = EmbeddedBroker(url=f"ipc://{state.embedded_dir}/bus.sock").start()
            bus = state.embedded
        self._connect(bus, timeout)
        return self

    def _connect(self, bus: Any, timeout: float) -> None:
        state = self._bus_state
        if isinstance(bus, BusClient) and bus.name == self.name:
            client, owned = bus, False
        elif isinstance(bus, (BusClient, EmbeddedBroker)):
            client, owned = BusClient(bus.url, name=self.name, role="robot", context=_context_of(bus)), True
        elif isinstance(bus, str):
            client, owned = BusClient(bus, name=self.name, role="robot"), True
        else:
            raise ConfigError(f"robot '{self.name}': a bus is a broker URL, a BusClient or an EmbeddedBroker, "
                              f"not {type(bus).__name__}")
        client.on_message(self._on_bus_delivery, manual=True)
        state.client, state.owns_client = client, owned
        self.bus = client
        if owned:
            try:
                client.start(timeout)
            except Exception:
                self.leave_bus()
                raise

    def leave_bus(self) -> Any:
        """Leave the bus (closing this robot's own connection and broker, if it started them)."""
        state = self._bus_state
        client, state.client = state.client, None
        if client is not None and state.owns_client:
            client.close()
        for service in (state.task_server, state.budget_service):
            if service is not None:
                service.close()
        state.task_server = state.budget_service = None
        if state.embedded is not None:
            state.embedded.stop()
            state.embedded = None
        if state.embedded_dir is not None:
            shutil.rmtree(state.embedded_dir, ignore_errors=True)
            state.embedded_dir = None
        if client is not None:
            self.bus = None
        return self

    def _require_bus(self) -> BusClient:
        client = self._bus_state.client
        if client is None:
            raise BusError(f"No bus configured on robot '{self.name}'")
        return client

    # -- sending ---------------------------------------------------------------------------

    def send_message(self, to: str, content: Any) -> RobotMessage:
        """Send ``content`` to every robot named ``to``; the message is kept in the outbox.

        Raises:
            BusError: the robot has no bus.
            BoundaryError: ``content`` cannot cross a process boundary (nothing was sent).
        """
        client, message, entry = self._compose(content, record=True)
        tracker = client.send(to, message.to_dict(), type=ROBOT_MESSAGE_TYPE)
        with self._bus_state.lock:
            entry["delivery"] = tracker
            self._bus_state.sent_ids[tracker.id] = message.key
        return message

    def send_reply(self, to: str, content: Any, in_reply_to: str) -> RobotMessage:
        """Answer the message whose key is ``in_reply_to`` (not recorded in the outbox).

        The reply goes to exactly the process that sent that message when this robot received
        it recently; otherwise to every robot named ``to``.

        Raises:
            BusError: the robot has no bus.
            BoundaryError: ``content`` cannot cross a process boundary (nothing was sent).
        """
        client, message, _ = self._compose(content, in_reply_to)
        with self._bus_state.lock:
            original = self._bus_state.inbound.get(in_reply_to)
        if original is None:
            client.send(to, message.to_dict(), type=ROBOT_MESSAGE_TYPE)
        elif original.type == ROBOT_MESSAGE_TYPE:
            client.reply(original, message.to_dict(), type=ROBOT_MESSAGE_TYPE)
        else:
            client.reply(original, message.content)  # a plain bus client (``robotlab send``) gets plain content
        return message

    def ask(self, to: str, content: Any, timeout: float = 30.0) -> RobotMessage:
        """Send ``content`` to ``to`` and wait for the reply.

        Raises:
            BusError: the robot has no bus.
            BoundaryError: ``content`` cannot cross a process boundary (nothing was sent).
            DeliveryFailed: the message was not delivered (``undeliverable``, ``nacked``...).
            ReplyTimeout: no reply within ``timeout``; the message says what became of the request.
        """
        client, message, _ = self._compose(content, record=True)
        reply = client.request(to, message.to_dict(), timeout=timeout, type=ROBOT_MESSAGE_TYPE)
        answer = self._as_robot_message(reply)
        if answer.in_reply_to is None:
            answer = RobotMessage(answer.id, answer.from_, answer.content, message.key)
        self._correlate(answer)
        return answer

    def _compose(self, content: Any, in_reply_to: str | None = None, *,
                 record: bool = False) -> tuple[BusClient, RobotMessage, dict[str, Any]]:
        """Check the bus and the payload, then take the next id (and an outbox entry) under the lock."""
        client = self._require_bus()
        plain = to_plain(content, "content")
        state = self._bus_state
        entry: dict[str, Any] = {}
        with state.lock:
            message = RobotMessage(state.next_id(), self.name, plain, in_reply_to)
            if record:
                entry.update(message=message, status="sent", replies=[], delivery=None)
                state.outbox[message.key] = entry
        return client, message, entry

    # -- receiving -------------------------------------------------------------------------

    def on_message(self, handler: Callable[..., Any]) -> Any:
        """Replace the handler of inbound messages; returns self.

        ``handler(message)`` is acked when it returns and nacked (with the exception's text)
        when it raises. ``handler(delivery, message)`` settles by hand with ``delivery.ack()``
        or ``delivery.nack(reason)``. Replies are correlated with the outbox before either runs.
        """
        state = self._bus_state
        state.handler, state.manual = handler, _takes_delivery(handler)
        return self

    def respond_to_tasks(self, responder: Callable[[RobotMessage], Any], auto_reply: bool = True) -> Any:
        """Answer every message that is not a reply with ``responder(message)``; returns self.

        With ``auto_reply`` a non-None result goes back with ``send_reply``. A responder that
        raises sends no reply; the delivery comes back ``nacked`` with the error's text.
        """

        def respond(message: RobotMessage) -> None:
            if message.is_reply:
                return
            result = responder(message)
            if auto_reply and result is not None:
                self.send_reply(to=message.from_, content=result, in_reply_to=message.key)

        self._bus_state.serving = True
        return self.on_message(respond)

    def serve(self, auto_reply: bool = True) -> Any:
        """Answer each message with ``run(content).reply`` (no tools); also answer run requests
        from spawn handles and delegation, and network tasks; returns self.
        """
        return self.respond_to_tasks(lambda message: self.run(flatten_content(message.content)).reply, auto_reply)

    def _on_bus_delivery(self, delivery: Delivery, message: Message) -> None:
        """The client's handler (two-argument form): route, correlate, then call the robot's handler."""
        if is_request(message):
            reply = answer_request(self, message)
            self._require_bus().reply(message, reply)
            delivery.ack()
            return
        robot_message = self._as_robot_message(message)
        self._correlate(robot_message)
        self._remember(robot_message.key, message)
        state = self._bus_state
        handler = state.handler
        if handler is None:
            delivery.ack()
        elif state.manual:
            handler(delivery, robot_message)
        else:
            handler(robot_message)
            if delivery.pending:
                delivery.ack()

    def _as_robot_message(self, message: Message) -> RobotMessage:
        content = message.content
        if message.type == ROBOT_MESSAGE_TYPE and isinstance(content, dict):
            return RobotMessage.from_dict(content, sender=message.sender)
        in_reply_to = None
        if message.reply_to is not None:
            with self._bus_state.lock:
                in_reply_to = self._bus_state.sent_ids.get(message.reply_to, message.reply_to)
        return RobotMessage(message.id, message.sender, content, in_reply_to)

    def _correlate(self, message: RobotMessage) -> None:
        if not message.is_reply:
            return
        with self._bus_state.lock:
            entry = self._bus_state.outbox.get(message.in_reply_to or "")
            if entry is not None and message not in entry["replies"]:
                entry["status"] = "replied"
                entry["replies"].append(message)

    def _remember(self, key: str, message: Message) -> None:
        state = self._bus_state
        with state.lock:
            state.inbound[key] = message
            while len(state.inbound) > RECENT_INBOUND:
                state.inbound.popitem(last=False)

    # -- other robots ----------------------------------------------------------------------

    def spawn(self, name: str = "robot", system_prompt: str | None = None, template: str | None = None,
              **options: Any) -> Any:
        """Start a child robot in its own process on this robot's bus; see ``docs/spawn.md``.

        Returns a :class:`~robotlab.robot.spawn.SpawnHandle`. The child inherits ``model``,
        ``provider`` and ``api_base`` unless ``options`` override them, and exits with this
        process unless ``detach=True``.
        """
        from robotlab.robot.spawn import spawn

        return spawn(self, name=name, system_prompt=system_prompt, template=template, **options)

    def pool(self, name: str, size: int, **options: Any) -> Any:
        """Spawn ``size`` instances of robot ``name`` as one :class:`~robotlab.robot.pool.RobotPool`."""
        from robotlab.robot.pool import RobotPool

        return RobotPool(self, name, size, **options)

    def _delegatee(self, to: Any) -> Any:
        """What ``delegate(to=...)`` runs: a robot or handle as it is, a name as a robot on the bus."""
        if isinstance(to, str):
            from robotlab.robot.spawn import RemoteRobot

            return RemoteRobot(to, self)
        return to


def _url_of(bus: Any) -> str | None:
    if isinstance(bus, str):
        return bus
    return getattr(bus, "url", None) if isinstance(bus, (BusClient, EmbeddedBroker)) else None


def _context_of(bus: Any) -> Any:
    """The zmq context to share: required for ``inproc://``, harmless otherwise."""
    if isinstance(bus, EmbeddedBroker):
        return bus.context
    return getattr(getattr(bus, "_link", None), "context", None) if bus.url.startswith("inproc://") else None
