"""Who is on the bus: peers keyed by socket identity, by instance id and by robot name."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Peer:
    """One connected bus member (a robotd, a client, a CLI)."""

    identity: bytes
    name: str
    instance: str
    role: str
    max_inflight: int
    expires: float
    joined: float
    pid: int | None = None
    parent: str | None = None
    token: str | None = None
    """The secret its client said in HELLO: only the holder may take the instance over."""
    key: str | None = None
    """The CURVE key it authenticated with (None without keys)."""
    admin: bool = True
    """May use the admin commands (every peer of a keyless broker; admin keys with keys)."""
    last_sent: float = 0.0
    inflight: set[int] = field(default_factory=set)
    delivered: int = 0
    nacked: int = 0
    frames_in: int = 1
    """Frames handled from this connection, its HELLO included: the ``seen`` of HEARTBEAT."""
    unconfirmed: bool = False
    """True when it sent replies, acks or nacks the broker has not confirmed yet."""
    stats: dict[str, Any] = field(default_factory=dict)
    """What it last reported of itself (tokens, dollars, status:
    ``robotlab.broker.member_stats``)."""

    @property
    def state(self) -> str:
        """``ready`` while it may take more deliveries, ``busy`` at its in-flight bound."""
        return "busy" if len(self.inflight) >= self.max_inflight else "ready"

    @property
    def has_room(self) -> bool:
        """True while another delivery fits under its in-flight bound."""
        return len(self.inflight) < self.max_inflight

    def describe(self, now: float) -> dict[str, Any]:
        """The row ``robotlab ps`` shows for this peer."""
        return {
            "name": self.name,
            "instance": self.instance,
            "role": self.role,
            "state": self.state,
            "in_flight": len(self.inflight),
            "delivered": self.delivered,
            "nacked": self.nacked,
            "pid": self.pid,
            "parent": self.parent,
            "uptime": round(now - self.joined, 3),
            "stats": dict(self.stats),
        }


class Registry:
    """Live peers. Robots of one name are kept in arrival order for fair ``any`` routing."""

    def __init__(self) -> None:
        self.by_identity: dict[bytes, Peer] = {}
        self.by_instance: dict[str, Peer] = {}
        self._by_name: dict[str, dict[str, Peer]] = {}

    def __len__(self) -> int:
        return len(self.by_identity)

    def claimant(self, instance: str, identity: bytes, token: str | None,
                 key: str | None) -> Peer | None:
        """The live peer that holds ``instance`` and may NOT be taken over by this HELLO, if any.

        A HELLO may take over a live instance only from its own connection, or, after a
        reconnect, with the same secret token (and the same key): the instance id is public
        (``ps`` shows it), the token is not.
        """
        holder = self.by_instance.get(instance)
        if holder is None or holder.identity == identity:
            return None
        if holder.token is not None and holder.token == token and holder.key == key:
            return None
        return holder

    def add(self, peer: Peer) -> Peer | None:
        """Register ``peer``; return the record it replaces when its instance was known."""
        old = self.by_instance.get(peer.instance)
        if old is not None:
            self.remove(old)
        self.by_identity[peer.identity] = peer
        self.by_instance[peer.instance] = peer
        self._by_name.setdefault(peer.name, {})[peer.instance] = peer
        return old

    def remove(self, peer: Peer) -> None:
        """Forget ``peer`` (idempotent)."""
        if self.by_identity.get(peer.identity) is peer:
            del self.by_identity[peer.identity]
        if self.by_instance.get(peer.instance) is peer:
            del self.by_instance[peer.instance]
        same_name = self._by_name.get(peer.name, {})
        if same_name.get(peer.instance) is peer:
            del same_name[peer.instance]
            if not same_name:
                del self._by_name[peer.name]

    def instances(self, name: str) -> list[Peer]:
        """Every live instance named ``name``."""
        return list(self._by_name.get(name, {}).values())

    def targets(self, header: dict[str, Any]) -> list[Peer]:
        """Who gets a message now: its ``to_instance``, else for ``any`` the least loaded
        instance of its name, else every live instance of the name; [] when none is live."""
        instance = header.get("to_instance")
        if instance:
            peer = self.by_instance.get(instance)
            return [peer] if peer is not None and peer.name == header["to"] else []
        if header.get("any"):
            peer = self.pick_any(header["to"])
            return [peer] if peer is not None else []
        return self.instances(header["to"])

    def pick_any(self, name: str, exclude: AbstractSet[str] = frozenset()) -> Peer | None:
        """The instance of ``name`` with the fewest deliveries in flight, skipping ``exclude``.

        Falls back to excluded instances when nothing else is live, so a retry still has a target.
        """
        candidates = self.instances(name)
        fresh = [p for p in candidates if p.instance not in exclude] or candidates
        return min(fresh, key=lambda p: len(p.inflight), default=None)

    def retry_target(self, header: dict[str, Any], tried: AbstractSet[str]) -> Peer | None:
        """Where a failed delivery of a message with ``header`` is tried again: its addressed
        instance, else the least loaded instance of its name not tried yet."""
        if header.get("to_instance"):
            return self.by_instance.get(header["to_instance"])
        return self.pick_any(header["to"], exclude=tried)

    def expired(self, now: float) -> list[Peer]:
        """Peers whose silence outlasted their liveness."""
        return [p for p in self.by_identity.values() if p.expires <= now]
