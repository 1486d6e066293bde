"""The spec's method names on ``Robot`` for its conversation and its bus side.

The Ruby robot answers a wide surface (much of it delegated to RubyLLM's chat). Here the work
lives in collaborators the robot holds, ``robot.conversation``
(:class:`~robotlab.robot.conversation.Conversation`) and ``robot.messaging``
(:class:`~robotlab.robot.messaging.RobotBus`); these facades only forward to them, hold no
state and touch nothing else of the robot, so each piece reads alone.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from robotlab.history.compaction import HistoryResult
from robotlab.robot.conversation import Conversation
from robotlab.robot.human import ask_human
from robotlab.robot.message import RobotMessage
from robotlab.robot.messaging import RobotBus

__all__ = ["BusFacade", "ConversationFacade"]


class ConversationFacade:
    """``messages``, ``history`` and the methods that rewrite the transcript."""

    conversation: Conversation

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation: the system message (if any), then every turn so far."""
        return self.conversation.messages()

    def clear_messages(self, keep_system: bool = True) -> Any:
        """Forget the conversation; with ``keep_system=False`` the system message goes too."""
        self.conversation.clear(keep_system)
        return self

    def replace_messages(self, messages: list[dict[str, Any]]) -> Any:
        """Replace the conversation (a leading system message replaces the system prompt)."""
        self.conversation.replace(messages)
        return self

    def compress_history(self, recent_turns: int = 3, keep_threshold: float = 0.6,
                         drop_threshold: float = 0.2,
                         summarizer: Callable[[str], str] | None = None) -> Any:
        """Keep, summarise or drop older turns by relevance to the recent ones.

        See ``docs/robots.md``.
        """
        self.conversation.compress(recent_turns, keep_threshold, drop_threshold, summarizer)
        return self

    def search_history(self, query: str, limit: int = 5) -> list[HistoryResult]:
        """Conversation messages most similar to ``query``, best first."""
        return self.conversation.search(query, limit)


class BusFacade:
    """``send_message``, ``send_reply``, ``ask``, ``on_message``, ``respond_to_tasks``, ``serve``,
    ``with_bus``, ``leave_bus`` and the readers ``bus``, ``outbox``, ``message_counter``,
    ``serving``."""

    messaging: RobotBus

    @property
    def bus(self) -> Any:
        """The robot's ``BusClient`` once joined, else what ``bus=`` was given."""
        return self.messaging.bus

    @property
    def outbox(self) -> dict[str, dict[str, Any]]:
        """A snapshot of sent messages: key -> ``{"message", "status", "replies", "delivery"}``."""
        return self.messaging.outbox

    def with_bus(self, bus: Any = None, *, timeout: float = 10.0) -> Any:
        """Join ``bus`` (a URL, ``BusClient`` or ``EmbeddedBroker``; none: stay, or start one).

        Returns self.
        """
        self.messaging.join(bus, timeout=timeout)
        return self

    def leave_bus(self) -> Any:
        """Leave the bus (closing this robot's own connection and broker, if it started them)."""
        self.messaging.leave()
        return self

    def send_message(self, to: str, content: Any) -> RobotMessage:
        """Send ``content`` to every robot named ``to``; kept in the outbox
        (``docs/messaging.md``)."""
        return self.messaging.send_message(to, content)

    def send_reply(self, to: str, content: Any, in_reply_to: str) -> RobotMessage:
        """Answer the message whose key is ``in_reply_to``."""
        return self.messaging.send_reply(to, content, in_reply_to)

    def ask(self, to: str, content: Any, timeout: float = 30.0) -> RobotMessage:
        """Send ``content`` to ``to`` and wait for the reply."""
        return self.messaging.ask(to, content, timeout)

    def ask_human(self, to: str, question: Any, timeout: float = 300.0,
                  default: Any = None) -> Future[Any]:
        """Ask the person named ``to`` (``robotlab human``); a future of her answer, ``default``
        after ``timeout`` seconds (``docs/humans.md``)."""
        return ask_human(self.messaging.require_client(), to, question, timeout=timeout,
                         default=default)

    def on_message(self, handler: Callable[..., Any]) -> Any:
        """Replace the handler of inbound messages; returns self."""
        self.messaging.on_message(handler)
        return self

    def respond_to_tasks(self, responder: Callable[[RobotMessage], Any],
                         auto_reply: bool = True) -> Any:
        """Answer every message that is not a reply with ``responder(message)``; returns self."""
        self.messaging.respond_to_tasks(responder, auto_reply)
        return self

    def serve(self, auto_reply: bool = True) -> Any:
        """Answer each message with ``run(content).reply``, and run requests and network tasks.

        Returns self.
        """
        self.messaging.serve(auto_reply)
        return self

    def spawn(self, name: str = "robot", system_prompt: str | None = None,
              template: str | None = None, **options: Any) -> Any:
        """Start a child robot in its own process on this robot's bus; see ``docs/spawn.md``.

        The child inherits ``model``, ``provider`` and ``api_base`` unless ``options`` override
        them, and exits with this process unless ``detach=True``.
        """
        from robotlab.robot.spawn import spawn

        return spawn(self, name=name, system_prompt=system_prompt, template=template, **options)

    def pool(self, name: str, size: int, **options: Any) -> Any:
        """Spawn ``size`` instances of robot ``name`` as one
        :class:`~robotlab.robot.pool.RobotPool`."""
        from robotlab.robot.pool import RobotPool

        return RobotPool(self, name, size, **options)
