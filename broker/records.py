"""What the broker keeps of a routed message: its Record, an InFlightCopy per copy in flight,
and the DELIVER header each copy carries.

Plain classes with their own ``__init__``, not dataclasses: one Record and an InFlightCopy per
target are made for every tracked message, and compiled (:mod:`robotlab.bus.native`) a dataclass's
generated ``__init__`` still runs interpreted (about 5k instructions a Record).
"""

from __future__ import annotations

from typing import Any, Final

from robotlab.bus.wire.protocol import EFFECTS_MAX, Body


class Record:
    """One sent message and what became of each copy.

    Attributes:
        key: what the broker dedupes and correlates on: (sender instance, id) for a SEND, ("", a
            broker-made id) for a replay. Instances are non-empty and bound to their connection,
            so no other party can make a key that collides with someone else's.
        receipt_id: the id the notified party knows the message by (its own SEND id, or its
            replay token).
        kept: True while the journal keeps it.
        held: True once it waited for a member of its name to come back.
        handed_to: the instances a copy was handed to (a DELIVER sent): its work may have run
            there. None until the first.
        restored: taken back from the journal at start-up: handed out or not before the
            restart, nobody knows, so its work may have run.
        owner: the instance an ``any`` message was last handed to (journaled): after a restart
            it is held for that instance, which may still be working on it or hold its reply.
        span: its ``route`` span while it is in the broker's hands (traced messages only).
        effects: the keys of the side-effect calls its receivers reported done (journaled): a
            later attempt is told them. None until the first.
    """

    __slots__ = ("header", "body", "notify", "key", "receipt_id", "pending", "outcomes", "replied",
                 "dlq_ids", "kept", "held", "handed_to", "restored", "owner", "span", "effects",
                 "header_bytes")

    def __init__(self, header: dict[str, Any], body: Body, notify: str | None, key: tuple[str, str],
                 receipt_id: str, pending: int = 0, kept: bool = False, held: bool = False,
                 span: Any = None, restored: bool = False, owner: str | None = None,
                 effects: list[str] | None = None, header_bytes: int = 0) -> None:
        self.header = header
        self.header_bytes = header_bytes  # as it came (0: not known), for the journal's bound
        self.body = body
        self.notify = notify
        self.key = key
        self.receipt_id = receipt_id
        self.pending = pending
        self.outcomes: list[tuple[str, str, str]] = []
        self.replied = False
        self.dlq_ids: list[str] = []
        self.kept = kept
        self.held = held
        self.handed_to: set[str] | None = None
        self.restored = restored
        self.owner = owner
        self.span = span
        self.effects = effects

    def note_effects(self, keys: list[Any]) -> bool:
        """Add the keys of side-effect calls a receiver reported done; True when one was new.
        Only keys of this message's calls count (``"<sender instance>/<id>:<n>"``, as
        :mod:`robotlab.tools.effects` makes them), and at most ``EFFECTS_MAX`` of them."""
        prefix = f"{self.header.get('from_instance', '')}/{self.header.get('id', '')}:"
        done = self.effects if self.effects is not None else []
        added = False
        for key in keys:
            if (isinstance(key, str) and key.startswith(prefix) and key not in done
                    and len(done) < EFFECTS_MAX):
                done.append(key)
                added = True
        if added:
            self.effects = done
        return added

    def may_have_run(self, on: set[str] | None = None) -> bool:
        """True when the work may have run: on one of the instances ``on`` (None: on any), or
        anywhere before a restart."""
        if self.restored:
            return True
        if self.handed_to is None:
            return False
        return on is None or not self.handed_to.isdisjoint(on)

    def nobody(self) -> str:
        """Why it could not be delivered when no member of its name was there."""
        to = self.header["to"]
        if self.held:
            return f"no live robot named {to!r} came back while it was held"
        return f"no live robot named {to!r}"

    def __repr__(self) -> str:
        return f"Record(key={self.key!r}, pending={self.pending}, outcomes={self.outcomes!r})"


class InFlightCopy:
    """One copy of a record in flight to one instance.

    Attributes:
        started: when this copy was handed out (monotonic): ``ps`` shows its age.
        limit: the latest its ack may come, however often it is touched (the maximum handling time).
    """

    __slots__ = ("id", "record", "instance", "deadline", "attempt", "tried", "started", "limit")

    def __init__(self, id: int, record: Record, instance: str, deadline: float, attempt: int,
                 tried: set[str], started: float = 0.0, limit: float = float("inf")) -> None:
        self.id = id
        self.record = record
        self.instance = instance
        self.deadline = deadline
        self.attempt = attempt
        self.tried = tried
        self.started = started
        self.limit = limit

    def late(self, now: float, ack_timeout: float) -> str:
        """Why it timed out at ``now``: past its maximum handling time, or its ack timeout."""
        if now >= self.limit:
            return (f"{self.instance} did not finish within the maximum handling time of "
                    f"{self.limit - self.started:g}s (it may still be running; its result will be "
                    "ignored)")
        return f"{self.instance} did not ack within {ack_timeout:g}s"

    def __repr__(self) -> str:
        return f"InFlightCopy(id={self.id}, instance={self.instance!r}, attempt={self.attempt})"


_SENDER_ONLY: Final = ("receipt", "untracked", "ack", "to_instance", "any", "idempotent",
                       "max_handling", "hold", "again", "effects_done")
"""SEND fields that tell the broker what to do: no receiver reads them, so no DELIVER carries
them (and ``effects_done`` is the broker's to say, never a sender's)."""


def deliver_header(header: dict[str, Any], delivery: int, attempt: int,
                   effects: list[str] | None = None) -> dict[str, Any]:
    """The DELIVER header of a SEND's ``header`` (stamped with its sender): the SEND's fields but
    the broker's own (``_SENDER_ONLY``), then the delivery id, the attempt and the side-effect
    calls earlier attempts reported done (``effects``). Fields the schema does not name travel
    on (newer peers may add some); each field left out is one a receiver does not decode and
    check."""
    deliver = dict(header)
    for name in _SENDER_ONLY:
        if name in deliver:
            del deliver[name]
    deliver["delivery"] = delivery
    deliver["attempt"] = attempt
    if effects:
        deliver["effects_done"] = list(effects)
    return deliver
