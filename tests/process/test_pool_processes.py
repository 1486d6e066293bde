"""Robot pools (spec 21): N spawned robotds under one name with ``any`` routing; ``map`` with a
concurrency cap; a failing or killed member does not stop the rest; a network task names a pool."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from robotlab import ConfigError, RemoteError, Robot, RobotlabError, RunConfig, create_network
from robotlab.robot.result import RobotResult
from robotlab.testing import requests_seen, serve_script
from tests.process.conftest import live
from tests.waiting import wait_until

pytestmark = pytest.mark.process


@pytest.fixture
def boss(broker: str) -> Iterator[Robot]:
    robot = Robot(name="boss", bus=broker, model="openai/scripted")
    yield robot
    robot.leave_bus()


def replies(results: list[RobotResult | RobotlabError]) -> list[str | None]:
    assert all(isinstance(r, RobotResult) for r in results), results
    return sorted(r.reply for r in results)  # type: ignore[union-attr]


def test_a_pool_is_n_robotds_under_one_name_sharing_the_work(boss: Robot, broker: str) -> None:
    turns = [{"content": f"answer {i}", "delay": 0.2} for i in range(9)]
    with serve_script(turns) as url:
        boss.with_model("openai/scripted").update(api_base=url)
        with boss.pool("worker", 3, system_prompt="You work.") as pool:
            rows = live(broker, "worker")
            assert len(rows) == 3 and {r["parent"] for r in rows} == {"boss"}
            assert pool.run("one").reply == "answer 0"
            results = pool.map([f"task {i}" for i in range(8)], concurrency=3)
            served = [r["delivered"] for r in live(broker, "worker")]
    assert replies(results) == sorted(f"answer {i}" for i in range(1, 9))
    assert sum(1 for count in served if count) >= 2, f"the work was not shared: {served}"
    wait_until(lambda: not live(broker, "worker"), timeout=15, message="the pool's members left")


def test_a_failing_item_is_reported_and_the_rest_still_run_in_order(boss: Robot) -> None:
    turns = [{"content": "first"}, {"error": {"status": 400, "message": "scripted refusal"}},
             {"content": "third"}]
    with serve_script(turns) as url:
        boss.update(api_base=url)
        with boss.pool("worker", 2) as pool:
            first, second, third = pool.map(["a", "b", "c"], concurrency=1)
            seen = [r["messages"][-1]["content"] for r in requests_seen(url)]
    assert (first.reply, third.reply) == ("first", "third")
    assert isinstance(second, RemoteError) and "scripted refusal" in str(second)
    assert seen == ["a", "b", "c"]  # one at a time: the server saw them in order


def test_a_killed_member_does_not_stop_the_rest(boss: Robot, broker: str) -> None:
    turns = [{"content": f"slow {i}", "delay": 1.0} for i in range(12)]
    with serve_script(turns) as url:
        boss.update(api_base=url)
        with boss.pool("worker", 3, timeout=20) as pool:
            victim = pool.members[0]
            outcome: list[list[RobotResult | RobotlabError]] = []
            jobs = [f"job {i}" for i in range(6)]
            runner = threading.Thread(target=lambda: outcome.append(pool.map(jobs)))
            runner.start()
            wait_until(lambda: any(r["in_flight"] for r in live(broker, "worker")
                                   if r["pid"] == victim.pid),
                       timeout=10, message="the victim holds a job")
            os.kill(victim.pid, signal.SIGKILL)
            runner.join(60)
            survivors = len(pool.alive())
    [results] = outcome
    assert survivors == 2
    done = [r for r in results if isinstance(r, RobotResult)]
    assert len(results) == 6
    # The victim's job was idempotent, so the broker redelivered it to a survivor.
    assert len(done) == 6, results


def test_a_network_task_can_name_a_pool(boss: Robot) -> None:
    with serve_script([{"content": "drafted"}]) as url:
        boss.update(api_base=url)
        with boss.pool("drafter", 2) as pool:
            net = create_network(name="crew", config=RunConfig(bus=boss.bus))
            try:
                net.task("draft", pool)
                result = net.run("Draft it.")
            finally:
                net.close()
    assert result.reply == "drafted"


def test_bad_pool_sizes_are_refused(boss: Robot) -> None:
    with pytest.raises(ConfigError, match="a pool needs a size of 1 or more members, got 0"):
        boss.pool("worker", 0)
    with pytest.raises(ConfigError, match="pool concurrency must be a positive integer"):
        boss.pool("worker", 1, concurrency=-2)
