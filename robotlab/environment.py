"""The project's own environment variables, read under one prefix, ``ROBOT_LAB_``.

:func:`variable` is how every module reads one. The bus's, tracing's and the compiled bus's
variables were once named ``ROBOTLAB_*`` (:data:`RENAMED`); until 0.2.0 the old name is still
read when the new one is not set, and the first read of each old name in a process logs one
warning naming the new one. The table of every variable is in docs/configuration.md.

This module imports nothing of robotlab: the bus reads ``ROBOT_LAB_PURE`` through it while it
decides, before its own modules load, whether their compiled build runs.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping

__all__ = ["PREFIX", "RENAMED", "variable"]

PREFIX = "ROBOT_LAB_"
"""The prefix of every variable the project reads (``ROBOT_LAB_TO_*`` are robot-to's)."""

RENAMED = {
    "ROBOT_LAB_BROKER": "ROBOTLAB_BROKER",
    "ROBOT_LAB_KEYS": "ROBOTLAB_KEYS",
    "ROBOT_LAB_KEY": "ROBOTLAB_KEY",
    "ROBOT_LAB_TRACES_FILE": "ROBOTLAB_TRACES_FILE",
    "ROBOT_LAB_TRACES_EXIT_SECONDS": "ROBOTLAB_TRACES_EXIT_SECONDS",
    "ROBOT_LAB_PURE": "ROBOTLAB_PURE",
}
"""New name -> the old name still read, with a warning, until 0.2.0."""

log = logging.getLogger("robotlab.config")
_warned: set[str] = set()
_lock = threading.Lock()


def variable(name: str, environ: Mapping[str, str] | None = None,
             warn: Callable[[str], object] | None = None) -> str | None:
    """The value of the variable ``name`` (``ROBOT_LAB_...``), else None when it is not set.

    When ``name`` is not set but its old name (:data:`RENAMED`) is, the old name's value: the
    first time a process reads each old name, ``warn`` (default: a WARNING of the
    ``robotlab.config`` logger) is given one line saying which name to set instead.

    Args:
        name: the variable's name, ``ROBOT_LAB_`` and the rest.
        environ: where to look (default: the process's environment).
        warn: what to call with the deprecation line.
    """
    if not name.startswith(PREFIX):
        raise ValueError(f"{name!r} is not one of the project's variables ({PREFIX}*)")
    env = os.environ if environ is None else environ
    if name in env:
        return env[name]
    old = RENAMED.get(name)
    if old is None or old not in env:
        return None
    with _lock:
        first = old not in _warned
        _warned.add(old)
    if first:
        line = f"${old} is deprecated and read only until robotlab 0.2.0: set {name} instead"
        (warn or log.warning)(line)
    return env[old]
