"""A broker running on a thread inside this process, for scripts that name no broker.

This module is the one place ``robotlab`` reaches into ``robotlab.broker``: the embedded bus
must run the very same broker code as ``robotlab broker``, so nothing behaves differently
between a script and a deployed crew. The import is local to :meth:`EmbeddedBroker.start`.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

import zmq

from .config import BrokerConfig


class _Stoppable(Protocol):
    """What this module keeps of the broker it started (typed without importing it)."""

    def stop(self) -> None: ...


class EmbeddedBroker:
    """A Broker on a daemon thread. ``inproc://`` by default; ``ipc://`` or ``tcp://`` for
    children."""

    def __init__(self, url: str | None = None, config: BrokerConfig | None = None,
                 context: zmq.Context | None = None) -> None:
        bind = url or f"inproc://robotlab-{os.urandom(6).hex()}"
        self.config = (config or BrokerConfig()).replace(bind=bind)
        self.context = context or zmq.Context.instance()
        self.url = bind
        self._broker: _Stoppable | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> EmbeddedBroker:
        """Bind (before returning, so clients can connect at once) and serve on a thread."""
        from robotlab.broker import Broker  # the documented inward exception, see module docstring

        broker = self._broker = Broker(self.config, self.context)
        self.url = broker.bind()
        self._thread = threading.Thread(target=broker.run, name="robotlab-embedded-broker",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the broker thread."""
        if self._broker is not None:
            self._broker.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
