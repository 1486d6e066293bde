"""Run a broker as a process: refuse unsafe binds, handle signals, map failures to exit codes."""

from __future__ import annotations

import gc
import logging
import signal

import zmq

from robotlab.bus.config import BrokerConfig, is_loopback
from robotlab.errors import ConfigError

from .broker import Broker

log = logging.getLogger("robotlab.broker")


def check_bind(config: BrokerConfig) -> None:
    """Refuse to listen beyond loopback without keys unless ``insecure`` was asked for."""
    if not is_loopback(config.bind) and not config.insecure:
        raise ConfigError(
            f"refusing to bind {config.bind}: it is reachable beyond this machine and no CURVE keys "
            "are configured. Bind a loopback address, or pass --insecure to accept unauthenticated "
            "peers on a network you trust."
        )


def serve(config: BrokerConfig, *, on_ready=None) -> int:
    """Bind, serve until SIGTERM or SIGINT, and return the exit code (0 on a clean stop).

    Args:
        config: how to listen.
        on_ready: called with the bound endpoint once the socket is bound.

    Raises:
        ConfigError: an unsafe or unusable bind address (exit code 78).
    """
    check_bind(config)
    broker = Broker(config)
    try:
        endpoint = broker.bind()
    except zmq.ZMQError as exc:
        raise ConfigError(f"cannot bind {config.bind}: {exc}") from exc
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: broker.stop())
    if on_ready is not None:
        on_ready(endpoint)
    # Everything allocated so far lives for the whole run: keep the collector off it, and
    # collect the young generation less often (the loop makes many short-lived dicts).
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    broker.run()
    log.info("broker stopped")
    return 0
