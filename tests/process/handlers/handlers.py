"""Handlers that the process tests host in real robotds (``--handler handlers:NAME``)."""

from __future__ import annotations

import os
import threading

from robotlab.bus import Message


def echo(message: Message) -> str:
    """Reply with the content and who answered."""
    return f"{message.content} (from {os.getpid()})"


def refuse(message: Message) -> None:
    """Always raise: the delivery is nacked with this message."""
    raise ValueError(f"refusing {message.content!r}")


def slow(message: Message) -> str:
    """Content "SECONDS[:MARKER]": touch MARKER (the test knows the handler started), wait, reply."""
    seconds, _, marker = str(message.content).partition(":")
    if marker:
        open(marker, "w").close()
    threading.Event().wait(float(seconds))
    return f"slept {seconds}"


def hang(message: Message) -> None:
    """Never return (until the process is killed)."""
    threading.Event().wait()


def hang_if_told(message: Message) -> str:
    """Hang when this process was started with HANG=1; otherwise echo."""
    if os.environ.get("HANG") == "1":
        threading.Event().wait()
    return echo(message)


def unsendable(message: Message) -> object:
    """Return something that cannot cross a process boundary (a function)."""
    return unsendable
