"""A person's desk on the bus.

What arrives is shown as one line each, and the questions are kept until she answers.

The desk is the whole of ``robotlab human`` but its terminal: it takes the bus client of a member
of role ``human``, shows every message that arrives through ``show`` (one line: who, what, id),
numbers the ones that wait for an answer, and turns a typed line into a reply or a send:

==========================  ====================================================================
``reply N TEXT``            answer question ``N`` with ``TEXT``
``TEXT``                    answer the newest question still open (``reply`` is only needed for
                            an older one)
``send NAME TEXT``          send ``TEXT`` to ``NAME``, expecting nothing back
``list``                    the open questions again
``help``                    these lines
``quit``                    leave (end of input does the same)
==========================  ====================================================================

Read ``docs/humans.md``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from robotlab.bus import BusClient, Message
from robotlab.bus.config import check_name
from robotlab.errors import ConfigError, DeliveryFailed
from robotlab.robot.human import HUMAN_ASK, question_of

__all__ = ["HELP", "HumanDesk", "expects_answer"]

HELP: Final = ("commands: reply N TEXT (answer question N) | TEXT (answer the newest open "
               "question) | send NAME TEXT | list | help | quit")
SEND_WAIT: Final = 5.0
"""Seconds ``send`` waits for the broker to say whether the message was delivered."""


def expects_answer(message: Message) -> bool:
    """True for a message whose sender waits for a reply.

    That is a question, a request, or anything with a deadline.
    """
    return not message.is_reply and (message.type in (HUMAN_ASK, "request")
                                     or message.deadline is not None)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


class HumanDesk:
    """One person's side of the bus.

    Args:
        client: her bus client (role ``human``); its handler becomes the desk's.
        show: where a line for her goes (the terminal's ``print``; any callable in a test).
    """

    def __init__(self, client: BusClient, show: Callable[[str], None]) -> None:
        self.client, self.show = client, show
        self._lock = threading.Lock()
        self._open: dict[int, Message] = {}
        self._numbers = 0
        client.on_message(self.arrived)

    def arrived(self, message: Message) -> None:
        """Show one arrival; a question is numbered and kept until she answers it."""
        if message.is_reply:
            self.show(f"{message.sender} answered (id {message.key}): {_text(message.content)}")
            return
        if not expects_answer(message):
            said = _text(question_of(message.content)[0])
            self.show(f"{message.sender} says (id {message.key}): {said}")
            return
        with self._lock:
            self._numbers += 1
            number = self._numbers
            self._open[number] = message
        self.show(self._describe(number, message))

    def _describe(self, number: int, message: Message) -> str:
        question, default = question_of(message.content)
        extras = [f"id {message.key}"]
        if message.deadline is not None:
            by = time.strftime("%H:%M:%S", time.localtime(message.deadline))
            extras.append(f"answer by {by}")
        if default is not None:
            extras.append(f"default: {_text(default)}")
        return f"[{number}] {message.sender} asks ({', '.join(extras)}): {_text(question)}"

    def waiting(self) -> list[tuple[int, Message]]:
        """The questions still open, oldest first, each with its number."""
        with self._lock:
            return sorted(self._open.items())

    def open_questions(self) -> list[str]:
        """The questions still open, oldest first, as :meth:`arrived` showed them."""
        return [self._describe(number, message) for number, message in self.waiting()]

    def answer(self, text: str, number: int | None = None) -> str:
        """Reply ``text`` to question ``number`` (the newest open one when None).

        Returns what to tell her.
        """
        return self.reply_to(text, number)[1]

    def reply_to(self, text: str, number: int | None = None) -> tuple[bool, str]:
        """As :meth:`answer`, with whether the answer was sent (a page shows the two apart)."""
        with self._lock:
            if number is None and self._open:
                number = max(self._open)
            message = self._open.pop(number, None) if number is not None else None
        if message is None:
            return False, (f"no open question {number}: type list" if number is not None
                           else "no open question to answer")
        if message.deadline is not None and message.deadline < time.time():
            return False, (f"{message.sender} stopped waiting for [{number}] (its time ran "
                           "out): nothing sent")
        self.client.reply(message, text)
        return True, f"answered [{number}] to {message.sender}"

    def handle(self, line: str) -> bool:
        """Act on one typed line; False when she leaves."""
        words = line.strip().split(maxsplit=2)
        command = words[0].lower() if words else ""
        if command in ("quit", "exit"):
            return False
        if command in ("", "help", "?"):
            self.show(HELP)
        elif command == "list":
            self.show("\n".join(self.open_questions()) or "no open questions")
        elif command == "reply":
            self.show(self._reply_command(words))
        elif command == "send":
            self.show(self._send_command(words))
        else:
            self.show(self.answer(line.strip()))
        return True

    def _reply_command(self, words: list[str]) -> str:
        if len(words) < 3 or not words[1].isdigit():
            return "usage: reply N TEXT (N is the number in brackets)"
        return self.answer(words[2], int(words[1]))

    def _send_command(self, words: list[str]) -> str:
        if len(words) < 3:
            return "usage: send NAME TEXT"
        try:
            to = check_name(words[1])
            tracker = self.client.send(to, words[2]).wait(SEND_WAIT)
        except (ConfigError, DeliveryFailed) as exc:
            return f"not sent: {exc}"
        return f"sent to {to} (id {self.client.name}:{tracker.id})"
