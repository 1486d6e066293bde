"""An embedded broker per test (the real broker code on a thread, over inproc://)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator

import pytest

from robotlab import bus
from robotlab.bus import BrokerConfig, EmbeddedBroker

RUN_PURE = ("robotlab.bus.member.client", "robotlab.bus.wire.protocol",
            "robotlab.broker.deliveries", "robotlab.broker.journal")
"""Compiled modules whose source ``ROBOT_LAB_PURE=1`` must run, for the member's side and the
broker's."""


@pytest.fixture(autouse=True, scope="session")
def pure_source_when_asked() -> None:
    """Under ``ROBOT_LAB_PURE=1`` (``make test-pure``) these tests run the bus's ``.py`` source:
    were the variable ignored, they would test the compiled build a second time and prove
    nothing."""
    if os.environ.get("ROBOT_LAB_PURE", "") in ("", "0"):
        return
    for name in RUN_PURE:
        path = str(importlib.import_module(name).__file__)
        assert path.endswith(".py"), f"ROBOT_LAB_PURE=1, yet {name} was loaded from {path}"


@pytest.fixture
def make_broker() -> Iterator:
    """Start embedded brokers with custom settings; all stop at teardown."""
    started: list[EmbeddedBroker] = []

    def make(**settings) -> EmbeddedBroker:
        broker = EmbeddedBroker(config=BrokerConfig(heartbeat=0.2, **settings)).start()
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.stop()


@pytest.fixture
def member(make_broker) -> Iterator:
    """Connect clients to one embedded broker (made on first use); all close at teardown."""
    clients: list[bus.BusClient] = []
    state: dict = {}

    def connect(name: str, **options) -> bus.BusClient:
        if "broker" not in state:
            state["broker"] = make_broker(ack_timeout=options.pop("ack_timeout", 2.0))
        client = bus.connect(state["broker"].url, name=name, **options)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()
