"""Run a broker as a process: refuse unsafe binds, handle signals, map failures to exit codes."""

from __future__ import annotations

import gc
import logging
import os
import signal

import zmq

from robotlab.bus import protocol
from robotlab.bus.config import BrokerConfig, is_loopback
from robotlab.bus.protocol import Command
from robotlab.errors import ConfigError

from .broker import Broker

log = logging.getLogger("robotlab.broker")


def check_bind(config: BrokerConfig) -> None:
    """Refuse to listen beyond loopback without keys unless ``insecure`` was asked for."""
    if not is_loopback(config.bind) and not config.insecure and not config.keys_dir:
        raise ConfigError(
            f"refusing to bind {config.bind}: it is reachable beyond this machine and no CURVE keys "
            "are configured. Pass --keys DIR (see `robotlab keys`), bind a loopback address, or pass --insecure to accept unauthenticated "
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
        probe.send_multipart(protocol.encode(Command.REQUEST, {"id": "probe", "op": "ping"}), zmq.NOBLOCK)
        answered = probe.poll(500, zmq.POLLIN)
    except zmq.ZMQError:
        answered = False
    finally:
        probe.close()
    if answered:
        raise ConfigError(f"cannot bind {config.bind}: another broker is listening there")


def serve(config: BrokerConfig, *, on_ready=None) -> int:
    """Bind, serve until SIGTERM or SIGINT, and return the exit code (0 on a clean stop).

    Args:
        config: how to listen.
        on_ready: called with the bound endpoint once the socket is bound.

    Raises:
        ConfigError: an unsafe or unusable bind address (exit code 78).
    """
    check_bind(config)
    check_ipc_free(config)
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
