"""Robots on an embedded broker (the real broker code on a thread): no process is started."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from robotlab import Robot
from robotlab.bus import BrokerConfig, EmbeddedBroker
from robotlab.testing import ScriptedLLM


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    """An embedded broker (inproc://, ack timeout 2 s)."""
    embedded = EmbeddedBroker(config=BrokerConfig(heartbeat=0.2, ack_timeout=2.0)).start()
    yield embedded
    embedded.stop()


@pytest.fixture
def robot(broker: EmbeddedBroker) -> Iterator[Callable[..., Robot]]:
    """Make robots on the broker, each answering from its own script; all leave at teardown."""
    made: list[Robot] = []

    def make(name: str, replies: list[Any] | None = None, **settings: Any) -> Robot:
        llm = ScriptedLLM([{"content": r} if isinstance(r, str) else r for r in replies or []])
        made.append(Robot(name=name, llm=llm, bus=broker, **settings))
        return made[-1]

    yield make
    for one in made:
        one.leave_bus()
