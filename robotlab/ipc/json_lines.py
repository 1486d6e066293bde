"""JSON lines over a stream socket: one JSON object per line, the framing written once.

Two of the three ways robotlab's processes talk use it: the fork server's requests and answers
(``robotd/forkserver.py`` and ``robotlab/robot/spawn.py``), and robot-to's socketpair to the
children it supervises (``robotlab/to/process/forked.py``). The bus proper is ZeroMQ frames
with msgpack (``robotlab/bus/wire/protocol.py``): it needs routing, acks and binary bodies; these
local channels need only a readable line a human can debug with ``socat``.
"""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LineReader", "decode", "encode", "send"]

MAX_LINE = 16 * 1024 * 1024
"""The longest line a reader accepts (bytes): a peer that never sends a newline cannot grow it
without bound."""


def encode(payload: Mapping[str, Any], default: Callable[[Any], Any] | None = None) -> bytes:
    """``payload`` as one line: compact JSON and a newline (``default`` as in ``json.dumps``)."""
    return json.dumps(payload, default=default).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """One line back to its object.

    Raises:
        ValueError: the line is not JSON, or not a JSON object.
    """
    value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError(f"expected one JSON object per line, got {type(value).__name__}")
    return value


def send(sock: socket.socket, payload: Mapping[str, Any],
         default: Callable[[Any], Any] | None = None) -> None:
    """Write ``payload`` as one line (raises ``OSError`` when the peer is gone)."""
    sock.sendall(encode(payload, default))


class LineReader:
    """Reads whole lines from one socket, keeping what arrived after the last newline."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def next(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next object; None when ``timeout`` seconds pass first.

        A ``timeout`` of None waits as the socket does.

        Raises:
            EOFError: the peer closed the connection before a whole line arrived.
            ValueError: the line is not one JSON object, or is longer than ``MAX_LINE``.
            OSError: the socket failed (including its own time-out, as ``TimeoutError``).
        """
        while b"\n" not in self._buffer:
            if timeout is not None and not select.select([self.sock], [], [], timeout)[0]:
                return None
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the peer closed the connection")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE and b"\n" not in self._buffer:
                raise ValueError(f"a line longer than {MAX_LINE} bytes")
        line, self._buffer = self._buffer.split(b"\n", 1)
        return decode(line)
