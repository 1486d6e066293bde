"""Why a broker did not welcome us, in one line.

The CURVE handshake's fate, read from the socket's monitor.

A CURVE handshake that fails looks, from the frames, exactly like no broker; the socket's
monitor tells which it was, so the error can name the cause. It also tells whether a
connection was made at all (a stopped broker's kernel still accepts one), so that a retry
line can say "no answer" rather than "nothing listening". :func:`open_dealer` makes a
member's socket with that monitor attached (its events read by ``wire/monitor.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import zmq

from ..config import is_ipv6
from ..wire.monitor import watch

if TYPE_CHECKING:
    from ..keys import KeyConfig

HANDSHAKE_FAILED = (int(zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL) | int(zmq.EVENT_HANDSHAKE_FAILED_AUTH)
                    | int(zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL))
"""The monitor events of a failed handshake."""
NO_DETAIL = int(zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
"""A handshake that broke off: the peer went away mid-way, or could not read it (another server
key)."""
CONNECTED = int(zmq.EVENT_CONNECTED)
"""The monitor event of a connection made (before its handshake): once per connection, never per
message."""
WATCHED = HANDSHAKE_FAILED | CONNECTED
"""The monitor events a member's socket watches."""
NO_KEYS = ("this broker requires CURVE keys and this client has none: give --keys DIR or set "
           "ROBOT_LAB_KEYS (`robotlab keys new NAME --robot NAME` makes one)")


def diagnose(event: Mapping[str, Any] | None, has_keys: bool) -> str:
    """The likeliest reason no WELCOME came, from the last handshake event (None: none seen)."""
    if event is None:
        if not has_keys:
            return "is `robotlab broker` running there?"
        return "is `robotlab broker --keys` running there (and is broker.key its public key)?"
    if not has_keys:  # a plain handshake fails only against a CURVE server
        return NO_KEYS
    if event["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
        return ("the broker refused this client's CURVE key (is its public key in the broker's "
                "authorized/ folder?)")
    if event["event"] == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
        return "the broker does not use CURVE keys: drop --keys (or unset ROBOT_LAB_KEYS)"
    return ("the broker cannot read this client's handshake again and again (is broker.key this "
            "broker's public key?)")


def open_dealer(context: zmq.Context, url: str,
                keys: KeyConfig | None) -> tuple[zmq.Socket, zmq.Socket | None]:
    """A member's DEALER socket connected to ``url``, and the monitor of its handshake (None on
    inproc)."""
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.IMMEDIATE, 1)  # never queue on a dead connection; the member resends itself
    sock.setsockopt(zmq.SNDHWM, 100_000)
    sock.setsockopt(zmq.RCVHWM, 100_000)
    if is_ipv6(url):
        sock.setsockopt(zmq.IPV6, 1)  # ZeroMQ answers "No such device" for [::1] without it
    if keys is not None:
        keys.apply(sock)
    monitor = None if url.startswith("inproc://") else watch(sock, WATCHED)
    sock.connect(url)
    return sock, monitor
