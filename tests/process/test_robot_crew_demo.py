"""The crew demo (part of ``make demo``) against a real broker: what it shows, and that it cleans
up."""

from __future__ import annotations

import psutil
import pytest

from robotlab.demo.crew import run_demo
from tests.process.conftest import live

pytestmark = pytest.mark.process


def test_the_crew_demo_shows_serve_ask_and_spawn_then_leaves_nothing_running(broker: str) -> None:
    lines: list[str] = []
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    run_demo(broker, say=lines.append)
    text = "\n".join(lines)
    assert ("lead asked concierge, reply: The quiet room on the second floor is "
            "free until noon.") in text
    assert "lead's outbox: lead:1 is replied" in text
    assert "it inherited model openai/scripted" in text
    assert "specialist  pid" in text and "spawned by lead" in text
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before
    assert not live(broker, "concierge") and not live(broker, "specialist")
