"""A person's desk on the web console (``robotlab web --human NAME``).

The console joins the bus a second time, as her (role ``human``), and keeps what arrives for the
page: the same :class:`~robotlab.interop.human_desk.HumanDesk` as ``robotlab human``, whose
lines go to a short list instead of a terminal, and whose open questions the page answers.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Final

from robotlab.bus import BusClient, Message
from robotlab.interop.human_desk import HumanDesk
from robotlab.robot.human import question_of

LINES_KEPT: Final = 100
"""Lines the page shows, newest first: older ones drop off (the open questions never do)."""


class WebDesk:
    """Her desk, read by ``Console.view`` and answered by the page's Answer buttons.

    Args:
        client: her bus client (role ``human``), not started yet: mail held for her while she
            was away arrives right after the welcome, and must find the desk there.
    """

    def __init__(self, client: BusClient) -> None:
        self.name = client.name
        self._lock = threading.Lock()  # lines come from the bus's thread, answers from the app's
        self._lines: deque[dict[str, Any]] = deque(maxlen=LINES_KEPT)
        self.desk = HumanDesk(client, self._show)

    def _show(self, line: str) -> None:
        with self._lock:
            self._lines.appendleft({"at": round(time.time(), 3), "line": line})

    def view(self) -> dict[str, Any]:
        """Her name, the lines shown to her (newest first) and the open questions (oldest
        first)."""
        with self._lock:
            lines = list(self._lines)
        return {"name": self.name, "lines": lines,
                "open": [question_row(number, message)
                         for number, message in self.desk.waiting()]}

    def answer(self, text: str, number: int | None) -> dict[str, Any]:
        """Reply ``text`` to question ``number`` (the newest when None), as typing it at
        ``robotlab human`` does.

        Returns ``{"ok": bool, "said": line}``: the line she would read at the terminal.
        """
        sent, said = self.desk.reply_to(text, number)
        self._show(said)
        return {"ok": sent, "said": said}


def question_row(number: int, message: Message) -> dict[str, Any]:
    """One open question as the page shows it: its number, who asks, its id, the question, the
    default the asker gets without an answer, and until when the asker waits (Unix time)."""
    question, default = question_of(message.content)
    return {"number": number, "from": message.sender, "id": message.key, "question": question,
            "default": default, "until": message.deadline}
