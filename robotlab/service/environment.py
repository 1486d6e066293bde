"""What systemd tells a service through its environment.

Where to notify, and how often to feed the watchdog.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


class ServiceEnvironment:
    """The service manager's settings for this process (all empty when not run by one).

    Immutable; equal to another with the same fields.
    """

    # A plain class, not a dataclass: a handler-only robotd imports this, and so never imports
    # dataclasses (nor inspect, dis and ast with it).

    __slots__ = __match_args__ = ("notify_socket", "watchdog_seconds")

    notify_socket: str | None
    """``$NOTIFY_SOCKET``: a path, or ``@name`` for the abstract namespace; None: nobody listens."""
    watchdog_seconds: float | None
    """``$WATCHDOG_USEC`` in seconds, when it is meant for this process (``$WATCHDOG_PID``)."""

    def __init__(self, notify_socket: str | None = None,
                 watchdog_seconds: float | None = None) -> None:
        object.__setattr__(self, "notify_socket", notify_socket)
        object.__setattr__(self, "watchdog_seconds", watchdog_seconds)

    def _fields(self) -> tuple[str | None, float | None]:
        return (self.notify_socket, self.watchdog_seconds)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ServiceEnvironment) and other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"ServiceEnvironment(notify_socket={self.notify_socket!r}, "
                f"watchdog_seconds={self.watchdog_seconds!r})")

    def __reduce__(self) -> tuple[type[ServiceEnvironment], tuple[object, ...]]:
        return (self.__class__, self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: ServiceEnvironment is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: ServiceEnvironment is immutable")


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
