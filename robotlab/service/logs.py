"""Log lines for people (text) or for journald and Loki (one JSON object a line).

The daemons' entry points call :func:`configure_logging` once with ``--log-level`` and
``--log-format``; everything else only calls ``logging.getLogger(...)``. In JSON, every line
the process writes to stderr is one object: Python's warnings go through logging too, and a
third-party logger that brings a handler of its own (litellm's) loses it and writes through
ours, once.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from robotlab.errors import ConfigError
from robotlab.observability import logfields

TEXT_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
LOG_FORMATS = ("text", "json")
LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
OWN_HANDLERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
"""Loggers that get a handler of their own when their package is imported (litellm's): each of
their lines came out twice, once not as JSON (and below WARNING on stdout)."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, pid, message, then ``robot``,
    ``instance``, ``message_id`` and ``trace_id`` where known
    (:mod:`robotlab.observability.logfields`), and the traceback, if any."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as one line of JSON."""
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "pid": os.getpid(),
            "message": record.getMessage(),
        }
        entry.update(logfields.current())
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
    # a warning is a log line like any other, not a plain one
    logging.captureWarnings(fmt == "json")
    if fmt == "json":  # a crash's traceback too: one object, its traceback in "exception"
        sys.excepthook = _log_uncaught
        threading.excepthook = lambda args: _log_uncaught(args.exc_type, args.exc_value,
                                                          args.exc_traceback)
    for name in OWN_HANDLERS:
        logger = logging.getLogger(name)
        if not any(isinstance(one, ToRootOnly) for one in logger.filters):
            logger.addFilter(ToRootOnly(logger))
    adopt_loggers(OWN_HANDLERS)
    native = sys.modules.get("robotlab.bus.native")  # loaded by any process that uses the bus
    if native is not None:
        native.announce_pending()


def logs_json() -> bool:
    """True once :func:`configure_logging` set JSON lines up: what else the process writes to
    stderr (its last line, an error's) then goes through logging too."""
    return any(isinstance(handler.formatter, JsonFormatter)
               for handler in logging.getLogger().handlers)


def logging_options() -> list[str]:
    """``--log-level`` and ``--log-format`` as this process logs now, for a process it starts to
    log the same way (a spawned robot's fork server): WARNING and text when nothing set logging
    up."""
    effective = logging.getLogger().getEffectiveLevel()
    # A custom level has no name --log-level takes: the nearest named one below it.
    level = max((value for value in LEVELS if value <= effective), default=logging.DEBUG)
    return ["--log-level", logging.getLevelName(level),
            "--log-format", "json" if logs_json() else "text"]


def _log_uncaught(kind: type[BaseException], error: BaseException | None,
                  trace: TracebackType | None) -> None:
    error = error if error is not None else kind()
    if isinstance(error, KeyboardInterrupt):
        sys.__excepthook__(kind, error, trace)
        return
    logging.getLogger("robotlab").critical("uncaught %s: %s", kind.__name__, error,
                                           exc_info=(kind, error, trace))


def adopt_loggers(names: Iterable[str]) -> None:
    """Take the handlers off the loggers ``names`` and let their records reach the root's handler
    (ours). Call it again after importing the package that adds them: litellm does on import."""
    for name in names:
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True


class ToRootOnly(logging.Filter):
    """Hand a logger's records to the root's handlers only, never to a handler of its own.

    litellm adds its handler when imported and logs while the import goes on, before
    :func:`adopt_loggers` can take the handler off: on the logger beforehand, this filter
    stops each record there and hands it on, once the logger's other filters (litellm's secret
    redaction among them, added later) have passed it.
    """

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger = logger

    def filter(self, record: logging.LogRecord) -> bool:
        """Pass ``record`` to the root's handlers if the logger's other filters keep it.

        Always returns False.
        """
        others: list[Any] = [one for one in self.logger.filters if one is not self]
        # As Filterer.filter reads them: an object with a filter method, or a plain function.
        if all(one.filter(record) if hasattr(one, "filter") else one(record) for one in others):
            logging.getLogger().handle(record)
        return False
