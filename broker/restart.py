"""What a broker takes back from its journal at start-up: dead letters, names, unsettled messages."""

from __future__ import annotations

import logging
import time

from .deliveries import Deliveries
from .dlq import DeadLetterQueue
from .holds import Holds
from .journal import Restored

log = logging.getLogger("robotlab.broker")


def restore(restored: Restored, dlq: DeadLetterQueue, holds: Holds, deliveries: Deliveries, path: str | None) -> None:
    """Load what the journal at ``path`` kept; every unsettled message is held for its robot."""
    dlq.load(restored.letters)
    holds.known |= restored.names
    now = time.monotonic()
    for header, body, notify, key, receipt_id, owner in restored.messages:
        deliveries.restore(header, body, notify, key, receipt_id, now, owner)
        holds.know(header.get("from", ""))  # its sender is expected back for the receipt or reply
    if restored.messages or restored.letters:
        log.info("journal %s: %d unsettled messages held for their robots, %d dead letters",
                 path, len(restored.messages), len(restored.letters))
