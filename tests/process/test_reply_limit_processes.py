"""robotd bounds its robot's replies: ``--max-tokens N``, else the global
``chat.with_params.max_tokens`` (its environment variable here), and logs a reply the limit cut.

Real broker and robotd processes; the model is the script server from ``robotlab.testing``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from robotlab import Robot
from robotlab.testing import requests_seen, serve_script
from tests.process.conftest import ROBOT_READY, Proc, Processes, is_live
from tests.waiting import wait_until

pytestmark = pytest.mark.process

CUT = {"content": "a long answer that was", "finish_reason": "length",
       "usage": {"completion_tokens": 7}}


@pytest.fixture
def start_robot(processes: Processes, broker: str) -> Callable[..., Proc]:
    """Start a serving robotd on the script server at ``api``."""

    def start(name: str, api: str, *extra: str, env: dict[str, str] | None = None) -> Proc:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", broker,
                "--system-prompt", "You answer briefly.", "--model", "openai/scripted",
                "--api-base", api, "--serve", *extra]
        return processes.keep(argv, lambda proc: is_live(broker, name, proc), env=env,
                              name=f"robotd-{name}", timeout=ROBOT_READY)

    return start


@pytest.fixture
def alice(broker: str) -> Iterator[Robot]:
    robot = Robot(name="alice", bus=broker, model="openai/scripted")
    yield robot
    robot.leave_bus()


@pytest.fixture
def script() -> Iterator[Callable[[list[dict[str, Any]]], str]]:
    with ExitStack() as stack:
        yield lambda turns: stack.enter_context(serve_script(turns))


def ask(alice: Robot, to: str) -> str:
    sent = alice.send_message(to=to, content="tell me everything")
    wait_until(lambda: alice.outbox[sent.key]["status"] == "replied", timeout=30,
               message=f"{to} replied")
    return str(alice.outbox[sent.key]["replies"][0].content)


def test_max_tokens_bounds_the_call_and_a_cut_reply_is_logged(
        start_robot, alice: Robot, script) -> None:
    api = script([CUT])
    bob = start_robot("bob", api, "--max-tokens", "7")
    assert ask(alice, "bob") == CUT["content"]
    assert requests_seen(api)[0]["max_tokens"] == 7
    wait_until(lambda: "robot bob: a reply was cut at max_tokens=7" in bob.output(), timeout=10,
               message="robotd logged the cut reply")
    assert "WARNING" in next(line for line in bob.output().splitlines() if "was cut at" in line)


def test_without_the_flag_the_global_setting_applies(start_robot, alice: Robot, script) -> None:
    api = script([{"content": "short"}])
    start_robot("carol", api, env={"ROBOT_LAB_CHAT__WITH_PARAMS__MAX_TOKENS": "123"})
    assert ask(alice, "carol") == "short"
    assert requests_seen(api)[0]["max_tokens"] == 123
