"""One bus member per OS process: connect, announce readiness, handle deliveries, drain on SIGTERM.

The first SIGTERM (or SIGINT) lets the delivery in hand finish, acks it, says BYE and exits 0;
deliveries still queued are left unacked, so the broker fails them over or dead-letters them
(the sender is told). A second signal exits at once. A spawned robotd also stops, the same
graceful way, when the process that spawned it is gone (``watch_pid``).
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
from robotlab.bus.keys import client_keys
from robotlab.errors import ConfigError, PeerUnavailable

from .supervision import watch_process

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
    watch_pid: int | None = None
    """Stop when this process exits (the spawning process of a robot spawned without detach)."""
    ready_fd: int | None = None
    """A pipe to write ``ready <instance>`` to once the broker has welcomed us (the fork server reads it)."""
    quiet: bool = False
    """Skip the ready line on stderr (spawned robots share their parent's terminal)."""
    keys_dir: str | None = None
    """CURVE keys folder, for a broker run with ``--keys`` (``broker.key`` is read from it)."""
    key_file: str | None = None
    """This robot's secret key file (default: ``keys_dir/<name>.key_secret``)."""
    curve: dict[str, str] | None = None
    """Keys the parent resolved, handed over in memory (``KeyConfig.to_plain``; ``{}`` for none):
    a spawned child joins with exactly its parent's keys and reads neither flags nor
    ``$ROBOTLAB_KEYS``, since the long-lived fork server's environment may be older than the
    parent's."""

    def keys(self) -> bus.KeyConfig | None:
        """The client keys this robotd connects with (the same rule as every client), or None.

        Raises:
            ConfigError: a key file is missing or unreadable.
        """
        if self.curve is not None:
            return bus.KeyConfig.from_plain(self.curve) if self.curve else None
        return client_keys(self.name, self.keys_dir, self.key_file)


def _serves(handler: Callable[[bus.Message], Any]) -> Callable[[bus.BusClient], Any]:
    """The attach function of a handler daemon: the handler answers every message."""
    return lambda client: client.on_message(handler)


class Daemon:
    """Hosts one handler (a callable), or whatever ``attach`` installs on the client (a robot)."""

    def __init__(self, config: DaemonConfig, handler: Callable[[bus.Message], Any] | None = None, *,
                 attach: Callable[[bus.BusClient], Any] | None = None) -> None:
        if attach is None and handler is not None:
            attach = _serves(handler)
        elif attach is None or handler is not None:
            raise ValueError("give the Daemon either a handler or an attach function")
        self.config = config
        self.attach: Callable[[bus.BusClient], Any] = attach
        self.client: bus.BusClient | None = None
        self._stop = threading.Event()
        self._signals = 0

    def run(self) -> int:
        """Serve until signalled (or the watched process is gone); return the exit code.

        Raises:
            ConfigError: the broker did not answer at start (exit 78, so systemd does not loop).
        """
        self._install_signals()
        client = self._connect()
        self.client = client
        self._announce(client)
        if self.config.watch_pid is not None:
            watch_process(self.config.watch_pid, self.stop)
        # A timed wait: a signal delivered to another thread only runs its Python handler once
        # the main thread executes bytecode again, which an untimed wait would never do.
        while not self._stop.wait(0.2):
            pass
        client.close(bye=True, drain=None)  # finish the delivery in hand, however long it takes
        log.info("robotd %s stopped", self.config.name)
        return EXIT_OK

    def stop(self) -> None:
        """Finish the delivery in hand, then leave."""
        self._stop.set()

    def _connect(self) -> bus.BusClient:
        config = self.config
        client = bus.BusClient(
            config.broker, name=config.name, instance=config.instance,
            role="robot", parent=config.parent, max_inflight=config.max_inflight, keys=config.keys() or False,
        )
        self.attach(client)  # before start: nothing may arrive before the handler is in place
        try:
            client.start(timeout=config.connect_timeout)
        except PeerUnavailable as exc:
            client.close(bye=False)
            raise ConfigError(f"robotd {config.name}: {exc}") from exc
        return client

    def _announce(self, client: bus.BusClient) -> None:
        config = self.config
        if config.ready_fd is not None:
            try:
                os.write(config.ready_fd, f"ready {client.instance}\n".encode())
            except OSError:
                log.warning("robotd %s: nobody reads the ready pipe (the fork server is gone)", config.name)
            finally:
                os.close(config.ready_fd)
        if not config.quiet:
            print(f"robotd {config.name} ready (instance {client.instance}, pid {os.getpid()}) on {config.broker}",
                  file=sys.stderr, flush=True)

    def _install_signals(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._signals += 1
        if self._signals > 1:
            os._exit(EXIT_KILLED)  # second signal: the operator means it
        self.stop()
