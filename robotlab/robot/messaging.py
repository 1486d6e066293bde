"""A robot on the bus: send, reply, handle, serve, ask, with reply correlation in an outbox.

Read ``docs/messaging.md``. A robot holds one :class:`RobotBus` (``robot.messaging``), which
owns its bus state; the spec's method names on ``Robot`` forward to it
(``robotlab/robot/facades.py``). Each robot joins the bus with its own
:class:`~robotlab.bus.BusClient` under its own name, so deliveries to it are handled in its own
process, on that client's handler thread, one at a time and in order (the fix to the Ruby
original, which ran them inline in the sender).

What arrives is routed by bus message type: ``robot.run`` and ``network.task`` requests (from
spawn handles, delegation and networks) run the robot when it serves; ``robot.info`` describes
it; anything else becomes a :class:`~robotlab.robot.message.RobotMessage` for the handler.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from robotlab.bus import BusClient, inline, to_plain
from robotlab.bus.member.dispatcher import INLINE
from robotlab.inference import deadline
from robotlab.robot.connection import BusConnection, BusOwner
from robotlab.robot.message import ROBOT_MESSAGE_TYPE, RobotMessage
from robotlab.robot.message_records import MessageRecords
from robotlab.robot.remote_tasks import TaskServer
from robotlab.robot.requests import answer_request, is_request
from robotlab.robot.served_task import run_fitting
from robotlab.tools import effects

if TYPE_CHECKING:
    from robotlab.bus import Delivery, Message

__all__ = ["BusOwner", "RobotBus", "flatten_content"]

def flatten_content(content: Any) -> str:
    """What ``serve`` hands to ``run``.

    A dict becomes ``"k: v"`` lines, anything else its string.
    """
    if isinstance(content, dict):
        return "\n".join(f"{key}: {value}" for key, value in content.items())
    return "" if content is None else str(content)


def _takes_delivery(handler: Callable[..., Any]) -> bool:
    """True for the two-argument form ``handler(delivery, message)``."""
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    required = [p for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    return len(required) >= 2


class RobotBus:
    """One robot's side of the bus: its connection, message ids and outbox, the inbound messages
    it may still reply to, its handler, and whether it serves.

    Args:
        robot: the robot it belongs to (only its ``name`` and ``run`` are used).
        bus: what the robot was given as ``bus=``: a broker URL, a ``BusClient`` or an
            ``EmbeddedBroker`` is joined at once; anything else is only remembered.
    """

    def __init__(self, robot: BusOwner, bus: Any = None) -> None:
        self.robot = robot
        self.records = MessageRecords(robot.name)
        self._handler: Callable[..., Any] | None = None
        self._manual = False
        self._responder: Callable[[RobotMessage], Any] | None = None
        """Set by :meth:`respond_to_tasks`: answered in :meth:`_handle` itself, with the bus
        message in hand, rather than through a handler and ``send_reply``'s lookup of it."""
        self._auto_reply = False
        self._serving = False
        self.connection = BusConnection(robot, self._on_bus_delivery, bus)
        self.connection.join_configured()  # last: a delivery may come as soon as it is joined

    @property
    def name(self) -> str:
        return self.robot.name

    @property
    def bus(self) -> Any:
        """The joined ``BusClient``, else what ``bus=`` was given (None when nothing)."""
        return self.connection.bus

    @property
    def budget_service(self) -> Any:
        """This robot's budget, served to the robots it spawned
        (``robotlab/robot/shared_budget.py``)."""
        return self.connection.budget_service

    @budget_service.setter
    def budget_service(self, service: Any) -> None:
        self.connection.budget_service = service

    # -- readers ---------------------------------------------------------------------------

    @property
    def outbox(self) -> dict[str, dict[str, Any]]:
        """A snapshot of sent messages: key -> ``{"message", "status", "replies", "delivery"}``.

        ``status`` is ``"sent"`` until a reply arrives, then ``"replied"``; ``delivery`` is the
        bus :class:`~robotlab.bus.Tracker` (``.wait(timeout)`` raises if it was not delivered).
        Only the newest :attr:`outbox_limit` are kept.
        """
        return self.records.outbox()

    @property
    def outbox_limit(self) -> int:
        """How many entries the outbox keeps, the newest (default
        :data:`~robotlab.robot.message_records.OUTBOX_LIMIT`; 0 keeps none); a send past it drops
        the oldest."""
        return self.records.limit

    @outbox_limit.setter
    def outbox_limit(self, entries: int) -> None:
        if isinstance(entries, bool) or not isinstance(entries, int) or entries < 0:
            raise ValueError(f"outbox_limit must be a whole number of entries, 0 (keep none) or "
                             f"more; got {entries!r}")
        self.records.limit = entries

    @property
    def message_counter(self) -> int:
        """The last message id this robot used (0 before the first)."""
        return self.records.counter

    @property
    def serving(self) -> bool:
        """True once ``serve`` or ``respond_to_tasks`` was called."""
        return self._serving

    # -- the connection (``connection.py``) ------------------------------------------------

    @property
    def client(self) -> BusClient | None:
        """The joined ``BusClient`` (None when the robot has no bus)."""
        return self.connection.client

    def join(self, bus: Any = None, *, timeout: float = 10.0) -> None:
        """:meth:`BusConnection.join <robotlab.robot.connection.BusConnection.join>`."""
        self.connection.join(bus, timeout=timeout)

    def leave(self) -> None:
        """Leave the bus (closing this robot's own connection and broker, if it started them)."""
        self.connection.leave()

    def require_client(self) -> BusClient:
        """The joined client; BusError when the robot has no bus."""
        return self.connection.require_client()

    def task_server(self) -> TaskServer:
        """The server of network tasks sent to this robot (made on first use)."""
        return self.connection.task_server()

    # -- sending ---------------------------------------------------------------------------

    def send_message(self, to: str, content: Any) -> RobotMessage:
        """Send ``content`` to every robot named ``to``; the message is kept in the outbox.

        Raises:
            BusError: the robot has no bus.
            BoundaryError: ``content`` cannot cross a process boundary (nothing was sent).
        """
        client, message, entry = self._compose(content, record=True)
        # noted before it leaves: a plain reply names the bus id, and may come back at once
        client.send(to, message.to_dict(), type=ROBOT_MESSAGE_TYPE,
                    on_tracker=partial(self.records.sent, entry, key=message.key))
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
        original = self.records.inbound(in_reply_to)
        if original is None:
            client.send(to, message.to_dict(), type=ROBOT_MESSAGE_TYPE)
        else:
            self._reply(client, original, message)
        return message

    @staticmethod
    def _reply(client: BusClient, original: Message, message: RobotMessage) -> None:
        """Send ``message`` back to exactly the process that sent ``original``."""
        if original.type == ROBOT_MESSAGE_TYPE:
            client.reply(original, message.to_dict(), type=ROBOT_MESSAGE_TYPE)
        else:
            # a plain bus client (``robotlab send``) gets plain content
            client.reply(original, message.content)

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
        # a plain reply answers this request
        if answer.in_reply_to is None or reply.type != ROBOT_MESSAGE_TYPE:
            answer = RobotMessage(answer.id, answer.from_, answer.content, message.key)
        self.records.correlate(answer)
        return answer

    def _compose(self, content: Any, in_reply_to: str | None = None, *,
                 record: bool = False) -> tuple[BusClient, RobotMessage, dict[str, Any]]:
        """Check the bus and the payload, then take the next id (and an outbox entry) under the
        lock."""
        client = self.require_client()
        message, entry = self.records.next_message(to_plain(content, "content"), in_reply_to,
                                                   record)
        return client, message, entry

    # -- receiving -------------------------------------------------------------------------

    def on_message(self, handler: Callable[..., Any]) -> None:
        """Replace the handler of inbound messages.

        ``handler(message)`` is acked when it returns and nacked (with the exception's text)
        when it raises. ``handler(delivery, message)`` settles by hand with ``delivery.ack()``
        or ``delivery.nack(reason)``. Replies are correlated with the outbox before either runs.
        A handler declared :func:`robotlab.bus.inline` runs on the client's I/O thread.
        """
        self._handler, self._manual = handler, _takes_delivery(handler)
        self._responder = None
        self.connection.inline = bool(getattr(handler, INLINE, False))

    def respond_to_tasks(self, responder: Callable[[RobotMessage], Any],
                         auto_reply: bool = True) -> None:
        """Answer every message that is not a reply with ``responder(message)``.

        With ``auto_reply`` a non-None result goes back with ``send_reply``. A responder that
        raises sends no reply; the delivery comes back ``nacked`` with the error's text. A
        responder declared :func:`robotlab.bus.inline` (quick, never waiting on the bus or a
        model) answers on the client's I/O thread, with no hand-off to a handler thread; the
        requests that run the robot's model still go to the handler thread.
        """

        def respond(message: RobotMessage) -> None:
            if message.is_reply:
                return
            result = responder(message)
            if auto_reply and result is not None:
                self.send_reply(to=message.from_, content=result, in_reply_to=message.key)

        self._serving = True
        self.on_message(inline(respond) if getattr(responder, INLINE, False) else respond)
        # what ``respond`` does, done by _handle with the bus message in hand (one lookup and
        # three calls fewer on every request a serving robot answers)
        self._responder, self._auto_reply = responder, auto_reply

    def serve(self, auto_reply: bool = True) -> None:
        """Answer each message with ``run(content).reply`` (no tools), dropping the oldest of the
        conversation when it no longer fits the model (:mod:`robotlab.robot.served_task`); also
        answer run requests from spawn handles and delegation, and network tasks.
        """
        self.respond_to_tasks(
            lambda message: run_fitting(self.robot, flatten_content(message.content)).reply,
            auto_reply)

    def _on_bus_delivery(self, delivery: Delivery, message: Message) -> None:
        """The client's handler (two-argument form).

        It routes, correlates, then calls the robot's handler.

        The sender's deadline bounds the work: a message whose sender stopped waiting before
        it was taken up is nacked unrun, and every model call its handler makes ends by then.
        For an inline handler it runs on the I/O thread, but for a request that runs the model
        (:class:`~robotlab.robot.connection.BusConnection` tells the client which).
        """
        left = None if message.deadline is None else message.deadline - time.time()
        if left is not None and left <= 0:
            delivery.nack(f"timeout: the sender's deadline passed {-left:.1f}s before the work "
                          "began; not run")
            return
        # A redelivered message keeps its sender and id: its side-effect calls get the same keys,
        # and the broker tells it which of them an earlier attempt completed.
        work = f"{message.sender_instance}/{message.id}"
        report = partial(self.require_client().effect_done, message)
        with deadline.within(left), effects.working_on(work, message.effects_done, report):
            self._handle(delivery, message)

    def _handle(self, delivery: Delivery, message: Message) -> None:
        if is_request(message):
            reply = answer_request(self.robot, message)
            self.require_client().reply(message, reply)
            delivery.ack()
            return
        robot_message = self._as_robot_message(message)
        self.records.correlate(robot_message)
        self.records.remember(robot_message.key, message)
        responder = self._responder
        if responder is not None:
            if not robot_message.is_reply:
                result = responder(robot_message)
                if self._auto_reply and result is not None:
                    client, answer, _ = self._compose(result, robot_message.key)
                    self._reply(client, message, answer)
            if delivery.pending:
                delivery.ack()
            return
        handler = self._handler
        if handler is None:
            delivery.ack()
        elif self._manual:
            handler(delivery, robot_message)
        else:
            handler(robot_message)
            if delivery.pending:
                delivery.ack()

    def _as_robot_message(self, message: Message) -> RobotMessage:
        content = message.content
        if message.type == ROBOT_MESSAGE_TYPE and isinstance(content, dict):
            return RobotMessage.from_dict(content, sender=message.sender, attempt=message.attempt)
        in_reply_to = None
        if message.reply_to is not None:
            in_reply_to = self.records.key_of_sent(message.reply_to)
        return RobotMessage(message.id, message.sender, content, in_reply_to, message.attempt)

    def delegatee(self, to: Any) -> Any:
        """What ``delegate(to=...)`` runs.

        A robot or handle as it is, a name as a robot on the bus.
        """
        if isinstance(to, str):
            from robotlab.robot.spawn import RemoteRobot

            return RemoteRobot(to, self.robot)
        return to
