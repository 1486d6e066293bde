"""Asking a person on the bus: a question sent to a member of role ``human``, its answer a future.

A person joins the bus like any member (``robotlab human --name alice``), so a question to her is a
request to a name: ``ask_human(client, "alice", "Deploy now?", timeout=600, default="no")``
returns at once a :class:`concurrent.futures.Future` that resolves to the text she typed, or to
``default`` when ``timeout`` passes first. The question is held by the broker while she is away
(for up to ``timeout``, when the broker has seen her name before), so she sees it when she joins.
Read ``docs/humans.md``.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any, Final

from robotlab.bus import BusClient, to_plain
from robotlab.errors import ReplyTimeout

__all__ = ["HUMAN_ASK", "ask_human", "question_of"]

HUMAN_ASK: Final = "human.ask"
"""The bus message type of a question to a person: content ``{"question", "default"}``."""


def ask_human(client: BusClient, to: str, question: Any, *, timeout: float = 300.0,
              default: Any = None) -> Future[Any]:
    """Send ``question`` to the person named ``to``; a future of her answer.

    The future resolves to the reply's content (the text she typed), or to ``default`` once
    ``timeout`` seconds pass without one. It raises :class:`~robotlab.errors.DeliveryFailed` when
    the question cannot reach her (``undeliverable``: no member of that name, and the broker
    holds nothing for a name it has never seen).

    Raises:
        BoundaryError: ``question`` or ``default`` is not plain data (nothing was sent).
    """
    content = {"question": to_plain(question, "question"), "default": to_plain(default, "default")}
    # Held while she is away, and dropped by the broker once nobody waits for it any more.
    tracker = client.send_request(to, content, type=HUMAN_ASK, deadline=time.time() + timeout,
                                  hold=timeout)
    answer: Future[Any] = Future()

    def wait() -> None:
        try:
            answer.set_result(tracker.reply(timeout).content)
        except ReplyTimeout:
            answer.set_result(default)
        except Exception as exc:
            # DeliveryFailed, a closed client: the future carries it to its reader
            answer.set_exception(exc)

    threading.Thread(target=wait, name=f"ask-{to}", daemon=True).start()
    return answer


def question_of(content: Any) -> tuple[Any, Any]:
    """The question and default a message carries: a :data:`HUMAN_ASK`'s fields, a robot message's
    ``content``, else the content itself (``robotlab send --wait``), with no default."""
    if isinstance(content, dict) and "question" in content:
        return content["question"], content.get("default")
    if isinstance(content, dict) and "from" in content and "content" in content:
        return content["content"], None
    return content, None
