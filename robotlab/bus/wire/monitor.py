"""A socket's connection events, read from its ZeroMQ monitor.

A member reads them to tell a refused CURVE key from no broker (``member/handshake.py``); a
restarted primary broker reads them to tell a peer that is up from one that is not
(``broker/standby.py``). Not pyzmq's ``zmq.utils.monitor``: that module imports
``zmq.asyncio``, so asyncio and ssl, several megabytes in every member for the few bytes read
here.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Mapping
from typing import Any

import zmq

# numbers each monitor address (with the pid: a forked child counts on)
_monitors = itertools.count(1)


def watch(sock: zmq.Socket, events: int) -> zmq.Socket:
    """A monitor of ``events`` on ``sock``, at an address of its own; call it before ``connect``.

    pyzmq's default address is named after the socket's fd, which a closed socket's monitor can
    still hold (libzmq unbinds it later), so a new socket given the same fd number failed with
    "Address already in use".
    """
    address = f"inproc://robotlab-monitor-{next(_monitors)}-{os.getpid()}"
    return sock.get_monitor_socket(events, address)


def waiting_events(monitor: zmq.Socket) -> list[Mapping[str, Any]]:
    """Read every event waiting on a monitor socket, oldest first."""
    events: list[Mapping[str, Any]] = []
    while monitor.poll(0):
        events.append(parse_event(monitor.recv_multipart()))
    return events


def parse_event(frames: list[bytes]) -> Mapping[str, Any]:
    """One monitor event: ``event`` and ``value`` (16 and 32 bits, native order), then
    ``endpoint``."""
    if len(frames) != 2 or len(frames[0]) != 6:
        raise RuntimeError(f"not a ZeroMQ monitor event: {frames!r}")
    event, value = struct.unpack("=hi", frames[0])
    return {"event": event, "value": value, "endpoint": frames[1]}
