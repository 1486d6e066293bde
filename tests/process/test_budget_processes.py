"""Budgets across processes: spawned robots draw on their parent's ledger over the bus, so a
parent's token budget caps its whole subtree; a child whose parent is gone cannot reserve."""

from __future__ import annotations

import os
import re
import signal
import sys
import textwrap
from collections.abc import Iterator

import pytest

from robotlab import BudgetExceeded, RemoteError, Robot
from robotlab.robot.spawn import RemoteRobot
from robotlab.testing import requests_seen, serve_script
from tests.process.conftest import Processes, live
from tests.waiting import wait_until

pytestmark = pytest.mark.process

SIXTY = {"prompt_tokens": 50, "completion_tokens": 10}


@pytest.fixture
def api() -> Iterator[str]:
    with serve_script([{"content": f"answer {i}", "usage": SIXTY} for i in range(10)]) as url:
        yield url


def test_a_parents_token_budget_caps_its_spawned_robots(broker: str, api: str) -> None:
    boss = Robot(name="boss", bus=broker, model="openai/scripted", api_base=api, token_budget=100)
    try:
        kid = boss.spawn(name="kid")
        sibling = boss.spawn(name="sibling")
        assert kid.run("first").reply == "answer 0"
        assert boss.budget_ledger.consumed("tokens") == 60
        with pytest.raises(RemoteError) as crossed:
            sibling.run("second")  # spends 60 more: 120 > 100, after the call
        assert crossed.value.type_name == "InferenceError"
        assert ("Token budget of robot 'boss' exceeded: 120 tokens used by it and the robots it "
                "spawned") in str(crossed.value)
        with pytest.raises(RemoteError) as refused:
            kid.run("third")
        assert refused.value.type_name == "BudgetExceeded"
        assert ("budget exceeded for tokens: 120 > 100 (the budget of "
                "robot 'boss'") in str(refused.value)
        with pytest.raises(BudgetExceeded, match="budget exceeded for tokens: 120 > 100"):
            boss.run("the parent is capped too")
        assert len(requests_seen(api)) == 2  # nothing was spent after the cap
    finally:
        for handle in (kid, sibling):
            handle.stop()
        boss.leave_bus()


def test_a_child_with_its_own_budget_is_capped_by_the_smaller(broker: str, api: str) -> None:
    boss = Robot(name="boss", bus=broker, model="openai/scripted", api_base=api, token_budget=1000)
    try:
        kid = boss.spawn(name="kid", token_budget=50)
        with pytest.raises(RemoteError,
                           match="Token budget exceeded: 60 tokens used, budget is 50"):
            kid.run("first")
        assert boss.budget_ledger.consumed("tokens") == 60  # the parent's ledger saw it too
        with pytest.raises(RemoteError, match="budget exceeded for tokens: 60 > 50"):
            kid.run("second")
    finally:
        kid.stop()
        boss.leave_bus()


def test_a_parent_without_a_budget_serves_no_ledger(broker: str, api: str) -> None:
    boss = Robot(name="boss", bus=broker, model="openai/scripted", api_base=api)
    try:
        kid = boss.spawn(name="kid")
        assert kid.run("free").reply == "answer 0"
        assert not [row for row in _names(broker) if row.startswith("budget/")]
    finally:
        kid.stop()
        boss.leave_bus()


PARENT = textwrap.dedent("""
    import sys
    from robotlab import Robot
    parent = Robot(name="mortal", bus=sys.argv[1], model="openai/scripted", api_base=sys.argv[2],
                   token_budget=500)
    kid = parent.spawn(name="orphan", detach=True)
    print(f"orphan pid {kid.pid}", flush=True)
""")


def test_a_child_whose_parent_is_gone_cannot_reserve(processes: Processes, broker: str,
                                                     api: str) -> None:
    # The parent exits on its own; its detached child (which holds the log open) stays.
    parent = processes.start([sys.executable, "-c", PARENT, broker, api], name="parent")
    wait_until(lambda: parent.popen.poll() is not None, timeout=120,
               message="the parent spawned and exited")
    assert parent.popen.returncode == 0, parent.output()
    # Its own line: a warning of the parent's (a stale build's, at exit) may come after it.
    orphan = int(re.findall(r"^orphan pid (\d+)$", parent.output(), re.MULTILINE)[-1])
    tester = Robot(name="tester", bus=broker)
    try:
        wait_until(lambda: not [n for n in _names(broker) if n.startswith("budget/mortal/")],
                   timeout=15, message="the parent's ledger left the bus")
        with pytest.raises(RemoteError) as refused:
            RemoteRobot("orphan", tester, timeout=30).run("spend anyway")
        assert refused.value.type_name == "BudgetExceeded"
        assert "cannot reserve on the budget of robot 'mortal'" in str(refused.value)
        assert requests_seen(api) == []
    finally:
        os.kill(orphan, signal.SIGTERM)
        wait_until(lambda: not live(broker, "orphan"), timeout=15, message="the orphan left")
        tester.leave_bus()


def _names(url: str) -> list[str]:
    from robotlab import bus

    with bus.connect(url, name="fixture-ps", timeout=2) as client:
        return [row["name"] for row in client.admin("ps")]
