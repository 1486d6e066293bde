"""What a member must not lose: its replies, acks and nacks, kept until the broker confirms them.

A reply finished while the broker is away (restarting, or cut off by the network) would
otherwise be thrown away, and the sender's resend would run the work again. So the link keeps
each such frame, numbered by its place among the frames sent on the current connection, until
the broker's HEARTBEAT says it has handled that many (``seen``); whatever is still kept is sent
again after the next WELCOME. The broker and the requester dedupe what arrives twice.

The numbers belong to one connection: whenever the count starts again (a fresh socket, or a
second HELLO on the same one), every kept frame counts as unsent, so a count from a new
connection can never confirm a frame sent on an old one.
"""

from __future__ import annotations

import itertools
import logging
from typing import Final

from ..wire.protocol import Body

log = logging.getLogger("robotlab.bus")

LIMIT: Final = 10_000
"""Frames kept at most; past it the oldest go (with a warning): a broker that never confirms."""
LIMIT_BYTES: Final = 64 * 1024 * 1024
"""Bytes kept at most, the newest frame whatever its size; past it the oldest go. As the reply
cache's bound (``Dispatcher.reply_cache_bytes``): by count alone, replies near the broker's
16 MiB limit sent faster than its heartbeats confirm them would have held 160 GB."""


class Kept:
    """Kept frames by sequence number (positive: sent on this connection; negative: not yet
    sent), at most ``limit`` of them and ``max_bytes`` of their bytes (the newest kept whatever
    its size)."""

    def __init__(self, limit: int = LIMIT, max_bytes: int = LIMIT_BYTES) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self.dropped = 0
        """Frames dropped unconfirmed to stay within the bounds."""
        self.bytes = 0
        """The kept frames' bytes."""
        self._frames: dict[int, list[Body]] = {}
        self._unsent = itertools.count(-1, -1)

    def __len__(self) -> int:
        return len(self._frames)

    def keep(self, seq: int | None, frames: list[Body]) -> None:
        """Keep ``frames``, sent as frame ``seq`` of this connection (None: not sent yet)."""
        self._frames[seq if seq else next(self._unsent)] = frames
        self.bytes += _size(frames)
        while len(self._frames) > self.limit or (self.bytes > self.max_bytes
                                                 and len(self._frames) > 1):
            self.bytes -= _size(self._frames.pop(next(iter(self._frames))))
            self.dropped += 1
            if self.dropped == 1:
                # its sender's resend is answered from the reply cache, as after a lost reply
                log.warning("bus: the broker confirms too little; dropping the oldest kept "
                            "replies and acks")

    def confirm(self, seen: int) -> None:
        """The broker has handled the first ``seen`` frames of this connection."""
        for seq in [s for s in self._frames if 0 < s <= seen]:
            self.bytes -= _size(self._frames.pop(seq))

    def unsend(self) -> None:
        """The connection's count starts again: everything kept is to be sent again."""
        self._frames = {next(self._unsent): frames for frames in self._frames.values()}

    def take(self) -> list[list[Body]]:
        """Everything kept, oldest first, to send again (each is kept again as it goes out)."""
        frames, self._frames, self.bytes = list(self._frames.values()), {}, 0
        return frames


def _size(frames: list[Body]) -> int:
    total = 0  # a loop, not sum() over a generator: compiled, that would make a generator object
    for frame in frames:
        total += len(frame)
    return total
