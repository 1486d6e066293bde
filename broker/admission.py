"""Who joins the bus: a HELLO's checks (the key's names, a standby that does not serve, an
instance another connection holds), the member's registration and WELCOME, and the work that
resumes or waited for it."""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any, Protocol

from robotlab.bus.config import BrokerConfig
from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Body, Command, ErrorCode, Frame

from .absences import Absences
from .deliveries import Deliveries
from .registry import Peer, Registry
from .releases import release, resend_inflight
from .security import KeyGuard
from .standby import Standby

log = logging.getLogger("robotlab.broker")


class Hall(Protocol):
    """What admission reads and acts on (``Broker`` is one); a protocol, so no import cycle."""

    id: str
    config: BrokerConfig
    counters: Counter[str]
    guard: KeyGuard | None
    standby: Standby | None
    user_id: str | None
    registry: Registry
    absences: Absences
    deliveries: Deliveries

    def serve_from_journal(self) -> None: ...
    def _error(self, identity: bytes, code: str, detail: str, frame: Frame | None,
               ref: str | None = None) -> None: ...
    def _forget(self, peer: Peer, why: str, gone: bool = False) -> None: ...
    def _transmit(self, peer: Peer, command: Command, header: dict[str, Any],
                  body: Body) -> bool: ...


def admit(hall: Hall, identity: bytes, peer: Peer | None, frame: Frame) -> None:
    """HELLO {name, instance, token?, role, pid, parent?, max_inflight?} + claims -> WELCOME, or
    an ERROR (``forbidden``, ``passive`` or ``conflict``); see ``Commands.on_hello``."""
    h, guard = frame.header, hall.guard
    refusal = guard.refusal(hall.user_id, h["name"]) if guard is not None else None
    if refusal is not None and guard is not None:
        hall.counters["hello_refused"] += 1
        log.info("refused HELLO as %r with %s's key: %s", h["name"], guard.owner(hall.user_id),
                 refusal)
        hall._error(identity, ErrorCode.FORBIDDEN, f"HELLO as {h['name']!r} refused: {refusal}",
                    frame)
        return
    if hall.standby is not None:
        if not hall.standby.accepts(time.monotonic()):
            hall._error(identity, ErrorCode.PASSIVE,
                        "this broker is the standby and its peer is live: use the other", frame)
            return
        hall.serve_from_journal()  # a takeover: what the peer's journal held is taken back first
    holder = hall.registry.claimant(h["instance"], identity, h.get("token"), hall.user_id)
    if holder is not None:
        hall._error(identity, ErrorCode.CONFLICT,
                    f"instance {h['instance']!r} belongs to another live connection "
                    f"({holder.name}, pid {holder.pid}); it is free again {hall.config.expiry:g}s "
                    "after that one goes silent", frame)
        return
    if peer is not None and peer.instance != h["instance"]:
        hall._forget(peer, f"replaced by a new HELLO as {h['name']} ({h['instance']})", gone=True)
    new = _peer(hall, identity, h)
    away = hall.absences.joined(new)
    old = hall.registry.add(new) or away
    if old is not None:  # same instance again (reconnect): its in-flight work resumes
        new.inflight, new.delivered = old.inflight, old.delivered
        new.nacked, new.joined = old.nacked, old.joined
    config = hall.config
    welcome = {"broker": hall.id, "heartbeat": config.heartbeat, "liveness": config.liveness,
               "ack_timeout": config.ack_timeout, "max_message_bytes": config.max_message_bytes,
               "version": protocol.VERSION}
    claims = hall.deliveries.claims
    if claims is not None:  # after a takeover: what it holds, from its dedupe memory (claims.py)
        claims.joined(new.name, new.instance, frame.body)
    hall._transmit(new, Command.WELCOME, welcome, b"")
    log.info("peer %s (%s) %s as %s%s", new.name, new.instance,
             "rejoined" if old is not None else "joined",
             new.role, f" with {guard.owner(hall.user_id)}'s key" if guard is not None else "")
    if old is not None:
        resend_inflight(hall.deliveries, new)
    release(hall.deliveries, new.name, time.monotonic())


def _peer(hall: Hall, identity: bytes, h: dict[str, Any]) -> Peer:
    now, config, guard = time.monotonic(), hall.config, hall.guard
    max_inflight = h.get("max_inflight")
    if max_inflight is None or not 1 <= max_inflight <= config.max_inflight:
        max_inflight = config.max_inflight
    grant = guard.grant(hall.user_id) if guard is not None else None
    return Peer(
        identity=identity, name=h["name"], instance=h["instance"], role=h.get("role", "robot"),
        max_inflight=max_inflight, expires=now + config.expiry, joined=now, pid=h.get("pid"),
        parent=h.get("parent"), token=h.get("token"), key=hall.user_id,
        admin=grant.admin if grant is not None else guard is None,
    )
