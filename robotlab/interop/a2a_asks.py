"""A robot's questions back to an A2A client: A2A's ``input_required``, as a human ask on the bus.

A robot asks whoever sent it a message as it asks a person, with ``ask_human(client,
message.sender, question)`` (:mod:`robotlab.robot.human`): for a message from ``a2a-serve`` the
sender is the server's member name, so the question comes here. It is matched to the task that
waits on that robot instance (the oldest one delivered to it: an instance handles one message
at a time), the task goes ``input_required`` with the question as its status message, and the
A2A client's next message on the task is the answer, sent back as the ask's reply. The task then
works again until the robot replies (or asks again).

Synchronous, as ``crew.py``: the executor waits on worker threads.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from robotlab.bus import BusClient, Message
from robotlab.robot.human import HUMAN_ASK, question_of

from .crew import reply_text

log = logging.getLogger("robotlab.a2a")


class Wait:
    """One task waiting on a robot: its request's reply, or a question the robot asks first."""

    def __init__(self, task_id: str, robot: str, tracker: Any, timeout: float) -> None:
        self.task_id = task_id
        self.robot = robot
        self.tracker = tracker
        self.question: Message | None = None
        """The robot's open question, until the client answers it."""
        self._events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        threading.Thread(target=self._reply, args=(timeout,), name=f"a2a-{robot}",
                         daemon=True).start()

    def _reply(self, timeout: float) -> None:
        try:
            self._events.put(("reply", reply_text(self.tracker.reply(timeout).content)))
        except Exception as exc:
            # ReplyTimeout, DeliveryFailed: the executor fails the task with it
            self._events.put(("error", exc))

    def asked(self, message: Message) -> None:
        """The robot asks ``message``'s question: the waiting executor hears it next."""
        self.question = message
        self._events.put(("ask", message))

    def next(self) -> str | Message:
        """The robot's reply (text), or its question (the ask message), whichever comes first.

        Raises:
            BusError: the request failed or was not answered in time (``ReplyTimeout``).
        """
        kind, value = self._events.get()
        if kind == "error":
            raise value
        return value


def question_text(message: Message) -> str:
    """What the A2A client reads of a robot's question."""
    return reply_text(question_of(message.content)[0])


class Asks:
    """The tasks waiting on robots through one bus client, and the questions robots ask back."""

    def __init__(self, client: BusClient, timeout: float) -> None:
        self.client = client
        self.timeout = timeout
        self._waits: dict[str, Wait] = {}
        self._lock = threading.Lock()
        client.on_message(self.arrived)

    def send(self, task_id: str, robot: str, text: str) -> Wait:
        """Send ``text`` to one instance of ``robot`` for the task ``task_id``; its wait.

        Raises:
            BusError: the message could not be sent (a closed client).
        """
        with self._lock:  # kept before the robot can ask: its question finds the wait
            tracker = self.client.send_request(robot, text, any=True,
                                               deadline=time.time() + self.timeout)
            wait = self._waits[task_id] = Wait(task_id, robot, tracker, self.timeout)
        return wait

    def waiting(self, task_id: str | None) -> Wait | None:
        """The wait of ``task_id`` with a question open, if there is one."""
        with self._lock:
            wait = self._waits.get(task_id or "")
        return wait if wait is not None and wait.question is not None else None

    def answer(self, wait: Wait, text: str) -> None:
        """Send ``text`` to the robot as the answer to its open question."""
        question, wait.question = wait.question, None
        if question is not None:
            self.client.reply(question, text)

    def drop(self, task_id: str | None) -> None:
        """Forget the task's wait (it ended, or was canceled)."""
        with self._lock:
            self._waits.pop(task_id or "", None)

    def arrived(self, message: Message) -> None:
        """The bus client's handler: a robot's question goes to the task waiting on it; anything
        else is acked and dropped (nobody else writes to this server)."""
        if message.is_reply or message.type != HUMAN_ASK:
            return
        with self._lock:
            mine = [wait for wait in self._waits.values()
                    if wait.robot == message.sender and wait.question is None]
        on_instance = [wait for wait in mine if message.sender_instance in wait.tracker.instances]
        chosen = (on_instance or mine)[:1]
        if not chosen:
            log.warning("a question from %s that no task waits for: it waits for its own time-out",
                        message.sender)
            return
        chosen[0].asked(message)
