"""One bus member per OS process: connect, announce readiness, handle deliveries, drain on SIGTERM.

An absent broker is waited for (for ever by default, the link backing off 1 s to 30 s); the
daemon is ready (its stderr line, and ``READY=1`` to systemd) only once welcomed, and feeds
systemd's watchdog from its main loop while the bus I/O thread lives.

The first SIGTERM (or SIGINT) lets the delivery in hand finish, acks it, says BYE and exits 0;
deliveries still queued are left unacked, so the broker fails them over or dead-letters them
(the sender is told). A second Ctrl-C (SIGINT) exits at once; a repeated SIGTERM does not, since
systemd sends SIGTERM again to what is left of a unit once its main process has exited (a
spawned robot still finishing its step) and SIGKILLs only after ``TimeoutStopSec=``. A spawned
robotd also stops, the same graceful way, when the process that spawned it is gone (``watch_pid``).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from robotlab import bus
from robotlab.bus.keys import client_keys
from robotlab.bus.member.zmq_context import end as end_context
from robotlab.bus.member.zmq_context import own as own_context
from robotlab.errors import ConfigError, ExitCode
from robotlab.observability import logfields
from robotlab.service import Notifier, ServiceEnvironment
from robotlab.signal_relay import SignalRelay

from .supervision import watch_process

log = logging.getLogger("robotlab.robotd")

EXIT_OK = 0
EXIT_KILLED = 130


class DaemonConfig:
    """What one robotd hosts and where it connects.

    Immutable; equal to another with the same fields.
    """

    # A plain class, not a dataclass: a handler-only robotd then never imports dataclasses (nor
    # inspect, dis and ast with it).

    __slots__ = __match_args__ = ("name", "broker", "instance", "parent", "connect_timeout",
                                  "max_inflight", "watch_pid", "ready_fd", "quiet", "keys_dir",
                                  "key_file", "curve")

    name: str
    broker: str
    instance: str | None
    parent: str | None
    connect_timeout: float
    """Seconds to wait for the broker at start before exiting 75 (try again later); 0 waits
    for ever, so a robot whose host boots before the broker's simply joins once it is up."""
    max_inflight: int
    """Deliveries the broker may queue here; they are still handled one at a time."""
    watch_pid: int | None
    """Stop when this process exits (the spawning process of a robot spawned without detach)."""
    ready_fd: int | None
    """A pipe to write ``ready <instance>`` to once the broker has welcomed us (the fork server
    reads it)."""
    quiet: bool
    """Skip the ready line on stderr (spawned robots share their parent's terminal)."""
    keys_dir: str | None
    """CURVE keys folder, for a broker run with ``--keys`` (``broker.key`` is read from it)."""
    key_file: str | None
    """This robot's secret key file (default: ``keys_dir/<name>.key_secret``)."""
    curve: dict[str, str] | None
    """Keys the parent resolved, handed over in memory (``KeyConfig.to_plain``; ``{}`` for none):
    a spawned child joins with exactly its parent's keys and reads neither flags nor
    ``$ROBOT_LAB_KEYS``, since the long-lived fork server's environment may be older than the
    parent's."""

    def __init__(self, name: str, broker: str, instance: str | None = None,
                 parent: str | None = None, connect_timeout: float = 0.0, max_inflight: int = 16,
                 watch_pid: int | None = None, ready_fd: int | None = None, quiet: bool = False,
                 keys_dir: str | None = None, key_file: str | None = None,
                 curve: dict[str, str] | None = None) -> None:
        set_field = object.__setattr__
        set_field(self, "name", name)
        set_field(self, "broker", broker)
        set_field(self, "instance", instance)
        set_field(self, "parent", parent)
        set_field(self, "connect_timeout", connect_timeout)
        set_field(self, "max_inflight", max_inflight)
        set_field(self, "watch_pid", watch_pid)
        set_field(self, "ready_fd", ready_fd)
        set_field(self, "quiet", quiet)
        set_field(self, "keys_dir", keys_dir)
        set_field(self, "key_file", key_file)
        set_field(self, "curve", curve)

    def keys(self) -> bus.KeyConfig | None:
        """The client keys this robotd connects with (the same rule as every client), or None.

        Raises:
            ConfigError: a key file is missing or unreadable.
        """
        if self.curve is not None:
            return bus.KeyConfig.from_plain(self.curve) if self.curve else None
        return client_keys(self.name, self.keys_dir, self.key_file)

    def _fields(self) -> tuple[object, ...]:
        return (self.name, self.broker, self.instance, self.parent, self.connect_timeout,
                self.max_inflight, self.watch_pid, self.ready_fd, self.quiet, self.keys_dir,
                self.key_file, self.curve)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DaemonConfig) and other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}"
                          for name, value in zip(self.__slots__, self._fields(), strict=True))
        return f"DaemonConfig({shown})"

    def __reduce__(self) -> tuple[type[DaemonConfig], tuple[object, ...]]:
        return (self.__class__, self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: DaemonConfig is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: DaemonConfig is immutable")


def _serves(handler: Callable[[bus.Message], Any]) -> Callable[[bus.BusClient], Any]:
    """The attach function of a handler daemon: the handler answers every message."""
    return lambda client: client.on_message(handler)


class Daemon:
    """Hosts one handler (a callable), or whatever ``attach`` installs on the client (a robot)."""

    def __init__(self, config: DaemonConfig, handler: Callable[[bus.Message], Any] | None = None, *,
                 attach: Callable[[bus.BusClient], Any] | None = None,
                 notifier: Notifier | None = None) -> None:
        if attach is None and handler is not None:
            attach = _serves(handler)
        elif attach is None or handler is not None:
            raise ValueError("give the Daemon either a handler or an attach function")
        self.config = config
        self.attach: Callable[[bus.BusClient], Any] = attach
        self.client: bus.BusClient | None = None
        self.notifier = notifier or Notifier(ServiceEnvironment())
        """Tells systemd (when it listens) READY once welcomed, and feeds its watchdog from the
        loop."""
        self._stop = threading.Event()
        self._signals = 0
        # The process exits right after the client closes: the drained step's reply and BYE must
        # have left ZeroMQ by then (a spawned robotd leaves with os._exit, at once).
        self._context = own_context()

    def run(self) -> int:
        """Wait for the broker, serve until signalled (or the watched process is gone); return the
        exit code.

        Returns 75 (try again later) when no broker answered within a positive ``connect_timeout``.

        Raises:
            ConfigError: the broker refused this robot's name for its key (exit 78: no retry helps).
        """
        self._install_signals()
        client = self._connect()
        self.client = client
        # every line is this robot's
        logfields.about_process(robot=self.config.name, instance=client.instance)
        gave_up = self._wait_for_welcome(client)
        if gave_up is not None:
            client.close(bye=False)  # nothing was taken on yet, nothing to drain
            return gave_up
        self._announce(client)
        if self.config.watch_pid is not None:
            watch_process(self.config.watch_pid, self.stop)
        # Timed: the loop feeds systemd's watchdog, and a signal the kernel gave another thread
        # runs its Python handler (which wakes the relay) only once this thread runs bytecode.
        while not self._stop.wait(0.2):
            self._feed_watchdog(client)
        self.notifier.stopping(f"finishing the delivery in hand, then leaving {self.config.broker}")
        client.close(bye=True, drain=None)  # finish the delivery in hand, however long it takes
        end_context(self._context, self.config.name)
        log.info("robotd %s stopped", self.config.name)
        return EXIT_OK

    def stop(self) -> None:
        """Finish the delivery in hand, then leave."""
        self._stop.set()

    def _connect(self) -> bus.BusClient:
        config = self.config
        client = bus.BusClient(
            config.broker, name=config.name, instance=config.instance,
            role="robot", parent=config.parent, max_inflight=config.max_inflight,
            keys=config.keys() or False, context=self._context,
        )
        self.attach(client)  # before start: nothing may arrive before the handler is in place
        return client.start(timeout=None)

    def _wait_for_welcome(self, client: bus.BusClient) -> int | None:
        """None once welcomed, else the exit code: 0 if stopped first, 75 past the connect timeout.

        The link retries with backoff meanwhile, one log line a step.
        """
        timeout = self.config.connect_timeout
        deadline = time.monotonic() + timeout if timeout > 0 else None
        self.notifier.status(f"waiting for the broker at {self.config.broker}")
        while not self._stop.is_set():
            self._feed_watchdog(client)
            try:
                # Short waits, so a signal's handler runs and the deadline is checked.
                if client.wait_welcome(0.2):
                    return None
            except ConfigError as exc:
                client.close(bye=False)
                raise ConfigError(f"robotd {self.config.name}: {exc}") from exc
            if deadline is not None and time.monotonic() >= deadline:
                log.error("robotd %s: %s", self.config.name, client.no_answer(timeout))
                return ExitCode.TEMPFAIL
        return EXIT_OK

    def _feed_watchdog(self, client: bus.BusClient) -> None:
        # Fed only while the bus I/O thread runs: a robotd whose link died is hung, not waiting.
        if client.alive:
            where = "connected to" if client.connected else "reconnecting to"
            self.notifier.tick(f"{self.config.name} (instance {client.instance}) {where} "
                               f"{self.config.broker}")

    def _announce(self, client: bus.BusClient) -> None:
        config = self.config
        self.notifier.ready(f"{config.name} (instance {client.instance}) connected to "
                            f"{config.broker}")
        if config.ready_fd is not None:
            try:
                os.write(config.ready_fd, f"ready {client.instance}\n".encode())
            except OSError:
                log.warning("robotd %s: nobody reads the ready pipe (the fork server is gone)",
                            config.name)
            finally:
                os.close(config.ready_fd)
        # a log line, so that it is JSON with the others under --log-format json
        if not config.quiet:
            log.info("robotd %s ready (instance %s, pid %d) on %s", config.name, client.instance,
                     os.getpid(), config.broker)

    def _install_signals(self) -> None:
        if threading.current_thread() is threading.main_thread():
            # handled on the relay's thread: stop() sets the event the main thread waits on
            SignalRelay(self._on_signal, (signal.SIGTERM, signal.SIGINT)).install()

    def _on_signal(self, signum: int) -> None:
        self._signals += 1
        if signum == signal.SIGINT and self._signals > 1:
            os._exit(EXIT_KILLED)  # Ctrl-C again: the operator means it
        self.stop()  # SIGTERM again is systemd's final round for a unit's leftovers: keep draining
