"""``run.log``: one JSON object per line, one line per lifecycle event.

Every line has ``event`` and ``ts`` (local time, ISO-8601 with milliseconds and offset);
keys whose value is None are dropped. Events logged before the file is opened are kept in
a small buffer (the newest 100) and written on open.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import sys
from typing import Any, TextIO

BUFFER_LIMIT = 100


def local_timestamp() -> str:
    """Local time as ISO-8601 with milliseconds and the UTC offset."""
    return dt.datetime.now().astimezone().isoformat(timespec="milliseconds")


class JsonlLog:
    """Append-only JSONL event log.

    Args:
        echo: a stream that also receives every line (``--debug`` passes stderr).
    """

    def __init__(self, echo: TextIO | None = None) -> None:
        self._fd: int | None = None
        self._pending: collections.deque[str] = collections.deque(maxlen=BUFFER_LIMIT)
        self._echo = echo
        self.path: str | None = None

    def open(self, path: str | os.PathLike[str]) -> None:
        """Open ``path`` for append and flush the events buffered so far."""
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        while self._pending:
            os.write(self._fd, self._pending.popleft().encode("utf-8"))

    def event(self, name: str, **fields: Any) -> None:
        """Log one event; None-valued fields are dropped, False is kept."""
        record = {"event": name, "ts": local_timestamp()}
        record.update({key: value for key, value in fields.items() if value is not None})
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        if self._echo is not None:
            self._echo.write(line)
        if self._fd is None:
            self._pending.append(line)
        else:
            os.write(self._fd, line.encode("utf-8"))

    def close(self) -> None:
        """Fsync and close the file (safe to call twice)."""
        if self._fd is None:
            return
        try:
            os.fsync(self._fd)
        finally:
            os.close(self._fd)
            self._fd = None


def stderr_echo(debug: bool) -> TextIO | None:
    """The echo stream for ``--debug``: stderr when on, nothing otherwise."""
    return sys.stderr if debug else None
