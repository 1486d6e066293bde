"""Held, not dead-lettered: messages for a name whose members are away, and work of silent members.

A name the broker knows (it said HELLO since start, or the journal remembers it) with no live
member has its messages held for a grace period; they go out as soon as a member of that name
says HELLO, and are dead-lettered ``undeliverable`` only when the period runs out. A member
that goes silent (no BYE) keeps its in-flight deliveries for the same period: back with the
same instance id, it gets them again (and reports the ones it finished); only when it stays
away are they failed over or dead-lettered. So a broker restart or a short partition costs
latency, not work.

This module only keeps time and order; what holding means for a delivery is decided in
:mod:`robotlab.broker.deliveries`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from numbers import Real
from typing import Any, Final, Generic, TypeVar

Item = TypeVar("Item")
Away = TypeVar("Away")

log = logging.getLogger("robotlab.broker")

MAX_HOLD: Final = 24 * 3600.0
"""The longest hold a message may ask for (seconds)."""
DEPARTED_MAX: Final = 4096
"""Instances remembered as having said BYE (the newest), so replies to them are dropped."""
KNOWN_MAX: Final = 100_000
"""Names remembered as expected back (those seen most recently): a client's name is often made
up per run, and a local process may say HELLO under ever new names."""


class Holds(Generic[Item, Away]):
    """Held messages by robot name, and members away, each with the time they may wait until."""

    def __init__(self, seconds: float, known_max: int = KNOWN_MAX) -> None:
        self.seconds = seconds
        self.known: OrderedDict[str, None] = OrderedDict()
        """Names expected back, the one seen longest ago first: messages to them are held rather
        than dead-lettered. At most ``known_max``; past it the oldest are forgotten."""
        self.known_max = known_max
        self.forgotten = 0
        """Names forgotten to stay within ``known_max``."""
        self.away: dict[str, tuple[float, Away]] = {}
        """Members gone silent, by instance id: (until, the member)."""
        self.departed: OrderedDict[str, None] = OrderedDict()
        """Instances that said BYE: nobody there waits for a reply any more (:meth:`depart`)."""
        self._held: dict[str, dict[Hashable, tuple[float, Item]]] = {}
        self._due: list[tuple[float, int, str, Hashable]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return sum(len(held) for held in self._held.values())

    def know(self, name: str) -> bool:
        """Expect ``name`` back from now on; True when it was not known before."""
        known = self.known
        new = name not in known
        if new:
            known[name] = None
            while len(known) > self.known_max:
                forgotten, _ = known.popitem(last=False)
                self.forgotten += 1
                log.log(logging.WARNING if self.forgotten == 1 else logging.DEBUG,
                        "broker: more than %d names seen; forgetting those seen longest ago (%s "
                        "first): what comes for them fails at once instead of being held",
                        self.known_max, forgotten)
        else:
            known.move_to_end(name)
        return new

    def know_all(self, names: Iterable[str]) -> None:
        """:meth:`know` each of ``names``."""
        for name in names:
            self.know(name)

    # -- messages ---------------------------------------------------------------------------------

    def until(self, header: dict[str, Any], now: float, expected: bool = False) -> float | None:
        """When a message with no live target may be held until, or None to fail it now.

        A message's own ``hold`` (seconds, 0 for none) overrides the broker's; names the broker
        has never seen are not held (nobody is expected), unless the caller knows better
        (``expected``: a reply, whose requester did send a request).
        """
        if not expected and header.get("to") not in self.known:
            return None
        seconds = header.get("hold", self.seconds)
        if not isinstance(seconds, Real) or isinstance(seconds, bool) or seconds < 0:
            seconds = self.seconds
        return now + min(float(seconds), MAX_HOLD) if seconds > 0 else None

    def hold(self, name: str, key: Hashable, item: Item, until: float) -> None:
        """Hold ``item`` for ``name`` until ``until`` (monotonic seconds)."""
        self._held.setdefault(name, {})[key] = (until, item)
        heapq.heappush(self._due, (until, next(self._seq), name, key))

    def keep(self, name: str, key: Hashable, item: Item, until: float) -> None:
        """Hold again, with the time it already had, an item :meth:`release` handed out
        (its place in the time order is still there)."""
        self._held.setdefault(name, {})[key] = (until, item)

    def holding(self, name: str) -> bool:
        """True when something is held for ``name``."""
        return name in self._held

    def release(self, name: str) -> list[tuple[float, Item]]:
        """Everything held for ``name`` (a member of it is back), oldest first, with its hold
        time."""
        return list(self._held.pop(name, {}).values())

    def expired(self, now: float) -> list[Item]:
        """Held messages whose time ran out; they are no longer held."""
        out: list[Item] = []
        while self._due and self._due[0][0] <= now:
            until, _, name, key = heapq.heappop(self._due)
            held = self._held.get(name)
            entry = held.get(key) if held else None
            if held is None or entry is None or entry[0] != until:
                continue  # released since, or held again with another time
            del held[key]
            if not held:
                del self._held[name]
            out.append(entry[1])
        return out

    # -- members away ------------------------------------------------------------------------------

    def leave(self, instance: str, member: Away, now: float) -> None:
        """Keep a silent member's in-flight work until it comes back or the period runs out."""
        self.away[instance] = (now + self.seconds, member)

    def depart(self, instance: str) -> None:
        """``instance`` said BYE: a reply to it has nobody to wait for it, so it is dropped, not
        held and then dead-lettered (a ``send --wait`` that was interrupted, or timed out)."""
        self.departed[instance] = None
        while len(self.departed) > DEPARTED_MAX:
            self.departed.popitem(last=False)

    def back(self, instance: str) -> Away | None:
        """The member that was away under ``instance``, if it still was."""
        # the same instance id, said HELLO again: a member once more
        self.departed.pop(instance, None)
        entry = self.away.pop(instance, None)
        return entry[1] if entry is not None else None

    def gone(self, now: float) -> list[Away]:
        """Members whose absence outlasted the period; they are no longer waited for."""
        late = [instance for instance, (until, _) in self.away.items() if until <= now]
        return [self.away.pop(instance)[1] for instance in late]

    def next_deadline(self) -> float | None:
        """The earliest time something held runs out."""
        if not self.away:  # the usual case, asked every loop turn
            return self._due[0][0] if self._due else None
        times = [until for until, _ in self.away.values()]
        if self._due:
            times.append(self._due[0][0])
        return min(times, default=None)
