"""The robotlab broker: routes the typed bus between robot processes over ZeroMQ."""

from __future__ import annotations

from .broker import Broker

__all__ = ["Broker"]
