"""Members away and back: a silent member's work waits for it, and returns to it when it does.

The broker calls :class:`Absences` when a member leaves and when one says HELLO; the waiting
itself (how long, in what order) is kept by :mod:`robotlab.broker.holds`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from .deliveries import Deliveries
from .holds import Holds
from .journal import NoJournal
from .registry import Peer
from .releases import expire_holds

log = logging.getLogger("robotlab.broker")


class Absences:
    """Who is away, who is back, and what each one's absence does to its deliveries."""

    def __init__(self, holds: Holds[Any, tuple[Peer, str]], deliveries: Deliveries,
                 journal: NoJournal) -> None:
        self.holds = holds
        self.deliveries = deliveries
        self.journal = journal

    def left(self, peer: Peer, why: str, gone: bool) -> str:
        """``peer`` is no longer connected; return ``why`` with what became of its work.

        Unless it said it is ``gone`` (BYE, or its connection said HELLO as another instance),
        it is expected back for the hold period, and its in-flight deliveries wait for it. An
        idle member is expected back too: work held for its name keeps its share
        (:func:`~robotlab.broker.releases.release`), so the first instance back
        after a cut does not take everything.
        """
        if gone:
            self.holds.depart(peer.instance)
            self.deliveries.replies.departed(peer)
        if gone or self.holds.seconds <= 0:
            self.deliveries.lost(peer, why)
            self.journal.member_left(peer.instance)  # nothing of its own for a restart to wait on
            return why
        self.holds.leave(peer.instance, (peer, why), time.monotonic())
        if not peer.inflight:
            return why
        return (f"{why}; its {len(peer.inflight)} deliveries in flight wait "
                f"{self.holds.seconds:g}s for it")

    def joined(self, new: Peer) -> Peer | None:
        """``new`` said HELLO: remember its name, and return the away member it is, if proven.

        It proves it with the token (and key) of the member that went away; another claimant's
        HELLO ends the wait instead: the work was with a process that is gone.
        """
        self.holds.know(new.name)
        if new.role == "robot":  # clients' names are often made up per run: they are expected
            # back only while this broker runs; a robot's is seen again (the file keeps the newest)
            self.journal.name_seen(new.name)
        away = self.holds.back(new.instance)
        if away is None:
            return None
        if away[0].token != new.token or away[0].key != new.key:
            self.deliveries.lost(away[0], f"{away[1]}, and a new process took its instance id")
            return None
        log.info("peer %s (%s) came back: %d deliveries in flight resume", new.name, new.instance,
                 len(away[0].inflight))
        return away[0]

    def expire(self, now: float) -> None:
        """Dead-letter held messages, and fail the work of members, whose hold ran out."""
        expire_holds(self.deliveries, now)
        for peer, why in self.holds.gone(now):
            self.deliveries.lost(peer, f"{why} and stayed away {self.holds.seconds:g}s")
            self.journal.member_left(peer.instance)  # its work went to others: none to claim
