"""The robotlab message bus: a ZeroMQ client for the broker, and the wire protocol.

Read ``docs/bus.md`` for the delivery guarantees. Entry point: :func:`connect`.
"""

from __future__ import annotations

from typing import Any

from . import native

native.choose()  # before any compiled module loads: their source runs when they are stale

from .config import BrokerConfig, broker_url  # noqa: E402
from .embedded import EmbeddedBroker  # noqa: E402
from .keys import KeyConfig  # noqa: E402
from .member.client import BusClient  # noqa: E402
from .member.dispatcher import inline  # noqa: E402
from .member.message import Delivery, Message  # noqa: E402
from .member.tracking import Tracker  # noqa: E402
from .wire.plain_data import to_plain  # noqa: E402

__all__ = [
    "BrokerConfig",
    "BusClient",
    "Delivery",
    "EmbeddedBroker",
    "KeyConfig",
    "Message",
    "Tracker",
    "broker_url",
    "connect",
    "inline",
    "to_plain",
]


def connect(url: str | None = None, *, name: str | None = None, timeout: float | None = 5.0,
            **options: Any) -> BusClient:
    """Join the bus at ``url`` and return a started client.

    With no ``url`` a broker is started inside this process (``inproc://``, the same broker
    code as ``robotlab broker``); other clients in the process join it with
    ``connect(client.url)``, and it stops when this client closes.

    Args:
        url: the broker endpoint (tcp://, ipc:// or inproc://), or None for an embedded broker.
        name: the robot name to receive messages for (default ``client-<id>``).
        timeout: seconds to wait for the broker's WELCOME; None to return at once.
        **options: passed to :class:`BusClient` (instance, role, parent, max_inflight, context,
            keys: a :class:`KeyConfig` for a broker that requires CURVE keys; by default the
            keys ``$ROBOT_LAB_KEYS`` holds for ``name``, if it is set).

    Raises:
        PeerUnavailable: no broker answered within ``timeout`` (or it did not accept ``keys``).
        ConfigError: ``url`` is not a broker address (``http://...``), ``name`` is not a
            robot name (empty, or with spaces: see ``config.check_name``), or the broker
            refused ``name`` for this key.
    """
    embedded = None
    if url is None:
        embedded = EmbeddedBroker(context=options.get("context")).start()
        url = embedded.url
        options.setdefault("context", embedded.context)
    try:
        client = BusClient(url, name=name, **options)
    except Exception:
        if embedded is not None:  # a refused name: the broker started for it goes too
            embedded.stop()
        raise
    client._embedded = embedded
    try:
        return client.start(timeout)
    except Exception:
        client.close(bye=False)
        raise
