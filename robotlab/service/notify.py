"""The sd_notify protocol: ``READY=1``, ``STATUS=...``, ``WATCHDOG=1``.

They go as datagrams to ``$NOTIFY_SOCKET``.

The protocol is one ``AF_UNIX`` datagram of ``KEY=value`` lines (systemd's ``sd_notify(3)``),
a few lines here rather than a dependency. Without a socket every call does nothing, so the
daemons call it unconditionally. A send that fails is logged once and never raised: a
service manager that stopped listening must not take the daemon down with it.
"""

from __future__ import annotations

import logging
import time

from .environment import ServiceEnvironment

log = logging.getLogger("robotlab.service")


class Notifier:
    """Tells the service manager when this process is ready, what it is doing, and that it is
    alive."""

    def __init__(self, environment: ServiceEnvironment) -> None:
        self.address = _address(environment.notify_socket)
        self.watchdog_seconds = environment.watchdog_seconds
        self._last_feed = 0.0
        self._warned = False

    @property
    def active(self) -> bool:
        """True when a service manager listens."""
        return self.address is not None

    def ready(self, status: str) -> None:
        """Say the service is up (systemd's ``Type=notify`` start finishes here)."""
        self._send(f"READY=1\nSTATUS={status}")
        self._last_feed = time.monotonic()

    def status(self, status: str) -> None:
        """Show ``status`` in ``systemctl status``."""
        self._send(f"STATUS={status}")

    def tick(self, status: str | None = None) -> None:
        """Feed the watchdog if half its interval has passed (call it from the daemon's loop)."""
        if self.watchdog_seconds is None:
            return
        now = time.monotonic()
        if now - self._last_feed >= self.watchdog_seconds / 2:
            self._last_feed = now
            self._send("WATCHDOG=1" + (f"\nSTATUS={status}" if status else ""))

    def stopping(self, status: str = "stopping") -> None:
        """Say the service is shutting down (so a slow drain is not taken for a hang)."""
        self._send(f"STOPPING=1\nSTATUS={status}")

    def _send(self, message: str) -> None:
        if self.address is None:
            return
        import socket  # only under a service manager: a member without one never loads it

        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(message.encode(), self.address)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("cannot notify the service manager at %s: %s", self.address, exc)


def _address(notify_socket: str | None) -> str | bytes | None:
    if not notify_socket:
        return None
    if notify_socket.startswith("@"):
        return b"\0" + notify_socket[1:].encode()  # Linux abstract namespace
    return notify_socket
