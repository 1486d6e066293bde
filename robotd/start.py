"""robotd's start, whichever way its command line was read: logging, tracing, the daemon's config, a
handler.

``command.py`` reads every command line with click; ``flags.py`` reads a handler-only one
without it. Both end here, so a member starts the same way from either.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from robotlab.bus.config import broker_url, keys_dir
from robotlab.bus.config import key_file as bus_key_file
from robotlab.errors import ConfigError
from robotlab.observability import setup as setup_tracing
from robotlab.observability import trace_settings
from robotlab.service import Notifier, configure_logging, service_environment

from .daemon import Daemon, DaemonConfig


def prepare(*, name: str, url: str | None, instance: str | None, parent: str | None,
            keys_folder: str | None, key_file: str | None, connect_timeout: float,
            max_inflight: int, log_level: str, log_format: str) -> tuple[DaemonConfig, Notifier]:
    """Set up logging and tracing; return where and how the daemon joins, and its service notifier.

    Raises:
        ConfigError: a malformed broker address, or ``--key`` without a keys folder.
    """
    configure_logging(log_level, log_format)
    setup_tracing(trace_settings(), f"robotd-{name}")  # off unless OTEL_* names an exporter
    notifier = Notifier(service_environment())
    config = DaemonConfig(name=name, broker=broker_url(url), instance=instance, parent=parent,
                          connect_timeout=connect_timeout, keys_dir=keys_dir(keys_folder),
                          key_file=bus_key_file(key_file), max_inflight=max_inflight)
    if config.key_file and config.keys_dir is None:
        raise ConfigError("--key needs --keys DIR (or $ROBOT_LAB_KEYS) for the broker's public key")
    return config, notifier


def serve_handler(config: DaemonConfig, notifier: Notifier, handler_path: str) -> int:
    """Host the ``MODULE:FUNCTION`` handler until signalled; return the exit code.

    Raises:
        ConfigError: the handler does not load (see :func:`load_handler`).
    """
    return Daemon(config, load_handler(handler_path), notifier=notifier).run()


def load_handler(path: str) -> Callable[..., Any]:
    """Import ``MODULE:FUNCTION``.

    Raises:
        ConfigError: the path is malformed, the module does not import, or the name is not callable.
    """
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"--handler must look like MODULE:FUNCTION, got {path!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(f"cannot import handler module {module_name!r}: {exc}") from exc
    handler = getattr(module, attr, None)
    if not callable(handler):
        raise ConfigError(f"{module_name!r} has no callable named {attr!r}")
    return handler
