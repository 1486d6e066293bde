"""One bus member per OS process: connect, announce readiness, handle deliveries, drain on SIGTERM.

The first SIGTERM (or SIGINT) lets the delivery in hand finish, acks it, says BYE and exits 0;
deliveries still queued are left unacked, so the broker fails them over or dead-letters them
(the sender is told). A second signal exits at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from robotlab import bus
from robotlab.errors import ConfigError, PeerUnavailable

log = logging.getLogger("robotlab.robotd")

EXIT_OK = 0
EXIT_KILLED = 130


@dataclass(frozen=True)
class DaemonConfig:
    """What one robotd hosts and where it connects."""

    name: str
    broker: str
    instance: str | None = None
    parent: str | None = None
    connect_timeout: float = 10.0
    """Seconds to wait for the broker at start before exiting with the configuration code."""
    max_inflight: int = 16
    """Deliveries the broker may queue here; they are still handled one at a time."""


class Daemon:
    """Hosts one handler (a callable, or a robot's serve function) on the bus."""

    def __init__(self, config: DaemonConfig, handler: Callable[[bus.Message], Any]) -> None:
        self.config = config
        self.handler = handler
        self.client: bus.BusClient | None = None
        self._stop = threading.Event()
        self._signals = 0

    def run(self) -> int:
        """Serve until signalled; return the exit code.

        Raises:
            ConfigError: the broker did not answer at start (exit 78, so systemd does not loop).
        """
        self._install_signals()
        client = bus.BusClient(
            self.config.broker, name=self.config.name, instance=self.config.instance,
            role="robot", parent=self.config.parent, max_inflight=self.config.max_inflight,
        )
        client.on_message(self.handler)
        try:
            client.start(timeout=self.config.connect_timeout)
        except PeerUnavailable as exc:
            client.close(bye=False)
            raise ConfigError(f"robotd {self.config.name}: {exc}") from exc
        self.client = client
        print(f"robotd {self.config.name} ready (instance {client.instance}, pid {os.getpid()}) on {self.config.broker}",
              file=sys.stderr, flush=True)
        # A timed wait: a signal delivered to another thread only runs its Python handler once
        # the main thread executes bytecode again, which an untimed wait would never do.
        while not self._stop.wait(0.2):
            pass
        client.close(bye=True)
        log.info("robotd %s stopped", self.config.name)
        return EXIT_OK

    def stop(self) -> None:
        """Finish the delivery in hand, then leave."""
        self._stop.set()

    def _install_signals(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signals += 1
        if self._signals > 1:
            os._exit(EXIT_KILLED)  # second signal: the operator means it
        self.stop()
