"""What a broker takes back from its journal at start-up: dead letters, names, unsettled messages,
and who answered the last ``any`` messages."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from robotlab.bus.wire.protocol import Body

from .claims import Claims
from .deliveries import Deliveries
from .dlq import DeadLetterQueue
from .holds import Holds
from .journal_contract import Key, Restored
from .records import Record

log = logging.getLogger("robotlab.broker")


def restore(restored: Restored, dlq: DeadLetterQueue, holds: Holds, deliveries: Deliveries,
            path: str | None, members: dict[str, str] | None = None,
            requesters: Iterable[str] = ()) -> None:
    """Load what the journal at ``path`` kept; every unsettled message is held for its robot.
    The instances that may hold ``any`` work, the file's and at a standby takeover ``members``
    (those the old active broker streamed), are asked what they hold
    (:mod:`robotlab.broker.claims`): their names' ``any`` messages wait for them.
    ``requesters``: at a takeover, the names that sent such work, expected back for their
    replies."""
    # the members the file holds, and at a takeover those the active peer streamed
    members = {**restored.members, **(members or {})}
    dlq.load(restored.letters)
    holds.know_all(restored.names)
    holds.know_all(requesters)
    deliveries.answered_by = restored.answered
    now = time.monotonic()
    if members:
        holds.know_all(members.values())
        deliveries.claims = Claims.of(members, holds.seconds, now)
    for header, body, notify, key, receipt_id, owner, effects in restored.messages:
        take_back(deliveries, header, body, notify, key, receipt_id, now, owner, effects)
        holds.know(header.get("from", ""))  # its sender is expected back for the receipt or reply
    if restored.messages or restored.letters:
        log.info("journal %s: %d unsettled messages held for their robots, %d dead letters",
                 path, len(restored.messages), len(restored.letters))


def take_back(deliveries: Deliveries, header: dict[str, Any], body: Body, notify: str | None,
              key: Key, receipt_id: str, now: float, owner: str | None = None,
              effects: list[str] | None = None) -> None:
    """Take back a record the journal kept; held until a member of its name is back: for an
    ``any`` message that had been handed out, the instance that had it (``owner``). ``effects``:
    the side-effect calls its earlier attempts reported done."""
    record = Record(header, body, notify, key, receipt_id, kept=True, held=True, restored=True,
                    owner=owner, effects=effects)
    deliveries.active[record.key] = record
    deliveries.holds.hold(header["to"], record.key, record, now + deliveries.holds.seconds)
