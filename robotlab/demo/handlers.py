"""Small handlers that the offline demo hosts in real robotds.

They are named as ``--handler robotlab.demo.handlers:NAME``.

They also serve as the smallest examples of a bus handler: a plain function of one
:class:`~robotlab.bus.Message`, whose return value (unless None) is the reply.
"""

from __future__ import annotations

import os
from typing import Any

from robotlab.bus import Message

__all__ = ["clerk", "echo"]


def echo(message: Message) -> Any:
    """Reply with the content unchanged."""
    return message.content


def clerk(message: Message) -> str | None:
    """File plain messages (the ack is the whole answer); answer requests naming this process.

    Two clerks under one name show fan-out: a request to ``clerk`` reaches both, and each
    reply names the process that wrote it.
    """
    if message.type != "request":
        return None
    return f"clerk pid {os.getpid()} filed {message.content!r}"
