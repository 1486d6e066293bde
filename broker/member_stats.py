"""What members report of themselves (HEARTBEAT ``stats``), bounded and kept with their presence.

A member's map is its own word (tokens, dollars, a short status, robot-to's iteration and
phase); the broker only keeps the last one, per member, for ``ps``. Peer input is bounded
here: short keys, plain scalar values, short strings; anything else is dropped, never an error.
"""

from __future__ import annotations

import math
from typing import Any

from robotlab.bus.wire.protocol import Frame

from .registry import Peer

KEY_MAX = 32
"""Longest key kept."""
TEXT_MAX = 120
"""Longest string value kept (longer ones are cut)."""
KEYS_MAX = 16
"""Most entries kept."""


def member_stats(raw: dict[str, Any]) -> dict[str, Any]:
    """The entries of a reported map the broker keeps: scalar values under short keys."""
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        if len(kept) >= KEYS_MAX:
            break
        if not isinstance(key, str) or not 0 < len(key) <= KEY_MAX:
            continue
        if isinstance(value, str):
            kept[key] = value[:TEXT_MAX]
        elif (value is None or isinstance(value, (bool, int))
              or (isinstance(value, float) and math.isfinite(value))):
            kept[key] = value
    return kept


def on_heartbeat(identity: bytes, peer: Peer, frame: Frame) -> None:
    """HEARTBEAT {stats?}: the liveness refresh every message gets; ``stats`` replaces the member's
    figures."""
    stats = frame.header.get("stats")
    if isinstance(stats, dict):
        peer.stats = member_stats(stats)
