"""Why a broker did not welcome us, in one line: the CURVE handshake's fate, read from the socket's monitor.

A CURVE handshake that fails looks, from the frames, exactly like no broker; the socket's
monitor tells which it was, so the error can name the cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

HANDSHAKE_FAILED = (int(zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL) | int(zmq.EVENT_HANDSHAKE_FAILED_AUTH)
                    | int(zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL))
"""The monitor events a member's socket watches."""
NO_KEYS = ("this broker requires CURVE keys and this client has none: give --keys DIR or set ROBOTLAB_KEYS "
           "(`robotlab keys new NAME --robot NAME` makes one)")


def diagnose(event: Mapping[str, Any] | None, has_keys: bool) -> str:
    """The likeliest reason no WELCOME came, from the last handshake event (None: none seen)."""
    if event is None:
        if not has_keys:
            return "is `robotlab broker` running there?"
        return "is `robotlab broker --keys` running there (and is broker.key its public key)?"
    if not has_keys:  # a plain handshake fails only against a CURVE server
        return NO_KEYS
    if event["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
        return "the broker refused this client's CURVE key (is its public key in the broker's authorized/ folder?)"
    if event["event"] == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
        return "the broker does not use CURVE keys: drop --keys (or unset ROBOTLAB_KEYS)"
    return ("the broker refused this client's CURVE key or its handshake (is its public key in the broker's "
            "authorized/ folder, and is broker.key the broker's?)")


def latest_event(monitor: zmq.Socket, last: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """Read every event waiting on a handshake monitor socket; the newest, else ``last``."""
    while monitor.poll(0):
        last = recv_monitor_message(monitor)
    return last
