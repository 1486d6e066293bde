"""The robotlab broker: routes the typed bus between robot processes over ZeroMQ."""

from __future__ import annotations

from robotlab.bus import native

native.choose()  # the compiled broker modules run only when they match their source

from .broker import Broker  # noqa: E402

__all__ = ["Broker"]
