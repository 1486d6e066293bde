"""After a restart or a standby takeover: which member holds each ``any`` message, as the members
say.

A broker hands out an ``any`` message without writing its owner first (a commit on the path of
every request to a pool), so a restart may find a message whose owner the broker knew and the
file does not (its owner unknown, or the message not in the file at all and sent again by its
sender); so may a takeover, the owner reaching the passive broker's stream
(:mod:`robotlab.broker.replica`) a moment later if at all. What the file does hold, before any
hand-out to a member, is that member (its instance id and name,
:mod:`robotlab.broker.journal_members`); and one of a pair streams each instance the first time
it hands it an ``any`` message, and waits for the peer's ack of that one record.

So after a restart or a takeover the broker knows every instance that may hold work of an
``any`` message, and asks them: a member says HELLO with the keys (sender instance, message id) its
dedupe memory holds in the HELLO's body (the messages it is working on, and the ones it
finished, whose replies it keeps or acked). Until every such instance of a name has said HELLO
again, or the hold (``--hold``) since the start ran out, no ``any`` message for that name that
may have been handed out before (one taken back from the file, or one its sender sends again,
``again`` in its header) goes to anyone but the member that claims it; then the ones nobody
claimed go out as usual, since no member that was live had them, and the members still away
leave the file. A first send goes out at once: no broker had it before. A claim
counts only from an instance the file or the peer held, for a message addressed to that
instance's name.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from robotlab.bus.wire.protocol import ID_MAX, Body, unpack

from .journal_contract import Key

log = logging.getLogger("robotlab.broker")

CLAIMS_MAX: Final = 16_384
"""Keys read from one HELLO at most: above a member's dedupe memory (10,000 keys)."""


class Claims:
    """The takeover's window: instances expected back, by name, and who claimed which key."""

    def __init__(self, members: dict[str, str], until: float) -> None:
        self.members = dict(members)
        """Every instance the old active broker handed ``any`` work to: instance -> name."""
        self.waiting: dict[str, set[str]] = {}
        """Names whose ``any`` messages wait, with the instances still expected to say HELLO."""
        for instance, name in members.items():
            self.waiting.setdefault(name, set()).add(instance)
        self.claimed: dict[Key, str] = {}
        self.until = until
        """When the window closes whoever is still away (the hold after the takeover)."""

    @classmethod
    def of(cls, members: dict[str, str], hold: float, now: float) -> Claims | None:
        """The window of a takeover that found ``members``; None when nobody is expected, or
        with no hold (nothing is held then, for the members or anyone else)."""
        if not members or hold <= 0:
            return None
        log.info("%d members (%d names) may hold messages sent to any instance; those wait for "
                 "them (at most %gs)", len(members), len({*members.values()}), hold)
        return cls(members, now + hold)

    def open(self, name: str) -> bool:
        """True while instances of ``name`` that may hold its work are still away."""
        return name in self.waiting

    def joined(self, name: str, instance: str, body: Body) -> bool:
        """``instance`` said HELLO as ``name`` with ``body`` (its claims); True when it was the
        last one ``name`` waited for. Claims from an instance not streamed, or as another name,
        or malformed, count for nothing."""
        if self.members.get(instance) != name:
            return False
        for key in keys(body):
            self.claimed.setdefault(key, instance)
        waiting = self.waiting.get(name)
        if waiting is None:
            return False
        waiting.discard(instance)
        if waiting:
            return False
        del self.waiting[name]
        return True

    def decide(self, record: Any) -> bool:
        """May ``record`` (an ``any`` message) go out now? Its claimant becomes its owner (True);
        unclaimed, a message taken back from the file or sent again (``again``: its sender may
        have had it accepted before) waits while its name's window is open (False). A first
        send was never handed out: it goes at once."""
        to = record.header["to"]
        claimant = self.claimed.get(record.key)
        if claimant is not None and self.members.get(claimant) == to:
            record.owner = claimant
            return True
        return not (self.open(to) and (record.restored or record.header.get("again")))


def keys(body: Body) -> list[Key]:
    """The claimed keys of a HELLO's body: a msgpack list of [sender instance, id] pairs of
    strings; anything else (a peer's garbage) is no claim at all."""
    if not body or len(body) > CLAIMS_MAX * 2 * (ID_MAX + 4):
        return []
    try:
        pairs = unpack(body)
    except Exception:  # msgpack raises several unrelated types on garbage
        return []
    if not isinstance(pairs, list) or len(pairs) > CLAIMS_MAX:
        return []
    out: list[Key] = []
    for pair in pairs:
        if (isinstance(pair, list) and len(pair) == 2
                and isinstance(pair[0], str) and isinstance(pair[1], str)
                and 0 < len(pair[0]) <= ID_MAX and 0 < len(pair[1]) <= ID_MAX):
            out.append((pair[0], pair[1]))
    return out
