"""What systemd tells a service through its environment.

Where to notify, and how often to feed the watchdog.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceEnvironment:
    """The service manager's settings for this process (all empty when not run by one)."""

    notify_socket: str | None = None
    """``$NOTIFY_SOCKET``: a path, or ``@name`` for the abstract namespace; None: nobody listens."""
    watchdog_seconds: float | None = None
    """``$WATCHDOG_USEC`` in seconds, when it is meant for this process (``$WATCHDOG_PID``)."""


def service_environment(environ: Mapping[str, str] | None = None,
                        pid: int | None = None) -> ServiceEnvironment:
    """Read ``NOTIFY_SOCKET``, ``WATCHDOG_USEC`` and ``WATCHDOG_PID``.

    They come from ``environ``, else the process's environment.
    """
    env = os.environ if environ is None else environ
    watchdog = None
    usec = env.get("WATCHDOG_USEC", "")
    meant_for = env.get("WATCHDOG_PID", "")
    # A watchdog set for another pid (our parent's, inherited) is not ours to feed.
    if usec.isdigit() and int(usec) > 0 and (not meant_for or meant_for == str(pid or os.getpid())):
        watchdog = int(usec) / 1_000_000
    return ServiceEnvironment(notify_socket=env.get("NOTIFY_SOCKET") or None,
                              watchdog_seconds=watchdog)
