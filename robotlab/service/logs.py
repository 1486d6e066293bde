"""Log lines for people (text) or for journald and Loki (one JSON object a line).

The daemons' entry points call :func:`configure_logging` once with ``--log-level`` and
``--log-format``; everything else only calls ``logging.getLogger(...)``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime

from robotlab.errors import ConfigError

TEXT_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
LOG_FORMATS = ("text", "json")


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, pid, message (and the traceback, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as one line of JSON."""
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "pid": os.getpid(),
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: str, fmt: str = "text") -> None:
    """Send log records at ``level`` and above to stderr, as text or JSON lines.

    Raises:
        ConfigError: an unknown level or format.
    """
    if fmt not in LOG_FORMATS:
        raise ConfigError(f"--log-format must be one of {', '.join(LOG_FORMATS)}, got {fmt!r}")
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ConfigError(f"--log-level must be DEBUG, INFO, WARNING or ERROR, got {level!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=numeric, handlers=[handler], force=True)
