"""Run a broker as a process: refuse unsafe binds, handle signals, map failures to exit codes."""

from __future__ import annotations

import errno
import gc
import logging
import os
import signal
import threading
import time
from collections.abc import Callable

import zmq

from robotlab.bus.config import BrokerConfig, is_loopback
from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Command
from robotlab.errors import ConfigError, ExitCode
from robotlab.signal_relay import SignalRelay

from .broker import Broker
from .stopping import end as end_context
from .stopping import own as own_context

log = logging.getLogger("robotlab.broker")

# Bind errors that mean "not there yet": an address or interface still coming up (DHCP, a
# late network-online.target). Anything else is a configuration to fix.
_NOT_THERE_YET = frozenset({errno.EADDRNOTAVAIL, errno.ENODEV})
_BIND_RETRY_MAX = 5.0


def check_bind(config: BrokerConfig) -> None:
    """Refuse to listen beyond loopback without keys unless ``insecure`` was asked for."""
    if not is_loopback(config.bind) and not config.insecure and not config.keys_dir:
        raise ConfigError(
            f"refusing to bind {config.bind}: it is reachable beyond this machine and no CURVE "
            "keys "
            "are configured. Pass --keys DIR (see `robotlab keys`), bind a loopback address, or "
            "pass --insecure to accept unauthenticated "
            "peers on a network you trust."
        )


def check_ipc_free(config: BrokerConfig) -> None:
    """Refuse an ipc:// path where a live broker already listens.

    ZeroMQ binds an ipc path by unlinking whatever socket file is there, so a second broker
    would silently take the path from the first. A stale file (no one answering) is fine.
    """
    if not config.bind.startswith("ipc://"):
        return
    path = config.bind[len("ipc://"):]
    if not os.path.exists(path):
        return
    probe: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
    probe.setsockopt(zmq.LINGER, 0)
    try:
        probe.connect(config.bind)
        probe.send_multipart(protocol.encode(Command.REQUEST, {"id": "probe", "op": "ping"}),
                             zmq.NOBLOCK)
        answered = probe.poll(500, zmq.POLLIN)
    except zmq.ZMQError:
        answered = False
    finally:
        probe.close()
    if answered:
        raise ConfigError(f"cannot bind {config.bind}: another broker is listening there")


def bind_when_available(broker: Broker, stopping: threading.Event) -> str | None:
    """Bind, waiting up to ``bind_timeout`` for an address that does not exist yet.

    Returns the bound endpoint, or None when stopped first or when the address did not appear
    in time (logged: a later start may find it, so the caller exits 75).

    Raises:
        ConfigError: the address can never work as given (in use, a missing folder, refused).
    """
    config = broker.config
    deadline = time.monotonic() + config.bind_timeout
    delay = 0.25
    while True:
        try:
            return broker.bind()
        except zmq.ZMQError as exc:
            if exc.errno not in _NOT_THERE_YET:
                raise ConfigError(f"cannot bind {config.bind}: {exc}{_bind_hint(exc)}") from exc
            left = deadline - time.monotonic()
            if left <= 0:
                log.error("cannot bind %s after waiting %gs: %s; is that address configured on "
                          "this host?", config.bind, config.bind_timeout, exc)
                return None
            delay = min(delay * 2, _BIND_RETRY_MAX, left)
            log.warning("cannot bind %s yet (%s); trying again in %.1fs", config.bind, exc, delay)
            if stopping.wait(delay):
                return None


def _bind_hint(exc: zmq.ZMQError) -> str:
    if exc.errno == errno.ENOENT:
        return " (its folder does not exist: create it, or let systemd's RuntimeDirectory= make it)"
    if exc.errno == errno.EADDRINUSE:
        return " (another process listens there: stop it or choose another port)"
    return ""


def serve(config: BrokerConfig, *, on_ready: Callable[[str], None] | None = None,
          on_tick: Callable[[str], None] | None = None) -> int:
    """Bind, serve until SIGTERM or SIGINT, and return the exit code (0 on a clean stop).

    Args:
        config: how to listen.
        on_ready: called with the bound endpoint once the socket is bound.
        on_tick: called from the loop with a status line, at least every quarter heartbeat.

    Returns 75 (try again later) when the bind address did not appear within ``bind_timeout``.

    Raises:
        ConfigError: an unsafe or unusable bind address (exit code 78).
    """
    check_bind(config)
    check_ipc_free(config)
    # ended after the loop: what the last turns routed leaves first (stopping.py)
    context = own_context()
    try:
        broker = Broker(config, context)
    except BaseException:  # an unusable journal or key folder: no socket yet, nothing to send
        context.term()
        raise
    if on_tick is not None:
        broker.on_tick = on_tick
    stopping = threading.Event()

    def on_signal(_signum: int) -> None:
        stopping.set()
        broker.stop()

    # on the relay's thread: the main thread may be inside stopping.wait(), holding its lock
    relay = SignalRelay(on_signal, (signal.SIGTERM, signal.SIGINT)).install()
    # The handler runs on this thread, the loop's, between two bytecodes: no lock needed.
    signal.signal(signal.SIGHUP, lambda *_: broker.reload_keys())
    try:
        return _bind_and_run(broker, stopping, on_ready)
    finally:
        end_context(context)
        relay.restore()


def _bind_and_run(broker: Broker, stopping: threading.Event,
                  on_ready: Callable[[str], None] | None) -> int:
    endpoint = bind_when_available(broker, stopping)
    if endpoint is None:
        return ExitCode.OK if stopping.is_set() else ExitCode.TEMPFAIL
    if on_ready is not None:
        on_ready(endpoint)
    # Everything allocated so far lives for the whole run: keep the collector off it, and
    # collect the young generation less often (the loop makes many short-lived dicts).
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    broker.run()
    log.info("broker stopped")
    return 0
