"""Robots hosted by real ``robotd`` processes, talking to a robot in the test process.

The model is the script server from ``robotlab.testing``, run by the test: each robotd gets
``--model openai/scripted --api-base URL`` and takes the next scripted turn per request. Most
robotds here are spawned by alice (a fork of the warm fork server, milliseconds each, where a
cold ``robotd`` spends seconds importing litellm); spawned or started by hand, the daemon is
the same code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from robotlab import Robot
from robotlab.bus import Message
from robotlab.errors import DeliveryFailed, Nacked, RemoteError, ReplyTimeout
from robotlab.testing import serve_script
from tests.process.conftest import ROBOT_READY, Proc, Processes, is_live, live
from tests.process.test_spawn_processes import stop_children
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def sink(message: Message) -> None:
    """A robotd handler that takes everything and answers nothing."""
    return None


@pytest.fixture
def start_robot(processes: Processes, broker: str) -> Callable[..., Proc]:
    """Start ``robotd --name NAME --system-prompt ... --model openai/scripted --api-base URL
    --serve``."""

    def start(name: str, api: str, *extra: str) -> Proc:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", broker,
                "--system-prompt", "You answer briefly.", "--model", "openai/scripted",
                "--api-base", api, "--serve", *extra]
        return processes.keep(argv, lambda proc: is_live(broker, name, proc), name=f"robotd-{name}",
                              timeout=ROBOT_READY)

    return start


@pytest.fixture
def script() -> Iterator[Callable[[list[dict[str, Any]]], str]]:
    """Start script servers (``script(turns) -> url``); all stop at teardown."""
    with ExitStack() as stack:
        yield lambda turns: stack.enter_context(serve_script(turns))


@pytest.fixture
def alice(broker: str) -> Iterator[Robot]:
    """A robot in the test process, on the same broker; what it spawns is stopped at teardown."""
    robot = Robot(name="alice", bus=broker, model="openai/scripted")
    yield robot
    stop_children(broker, "alice")
    robot.leave_bus()


def test_a_served_reply_is_correlated_in_the_senders_outbox(start_robot, alice: Robot,
                                                            script) -> None:
    start_robot("bob", script([{"content": "pong"}]))
    sent = alice.send_message(to="bob", content="ping")
    wait_until(lambda: alice.outbox[sent.key]["status"] == "replied", timeout=30,
               message="bob replied")
    [reply] = alice.outbox["alice:1"]["replies"]
    assert (reply.from_, reply.content, reply.in_reply_to) == ("bob", "pong", "alice:1")


def test_two_serving_robots_exchange_exactly_one_reply(alice: Robot, script) -> None:
    api = script([{"content": "pong"}, {"content": "a second answer means a loop"}])
    alice.spawn(name="bob", api_base=api)
    alice.serve()
    alice.send_message(to="bob", content="ping")
    wait_until(lambda: alice.outbox["alice:1"]["status"] == "replied", timeout=30,
               message="bob replied")
    # bob handles deliveries in order, so once he answers this, a looping reply would be in.
    assert alice.ask("bob", "last", timeout=30).content == "a second answer means a loop"
    assert [len(e["replies"]) for e in alice.outbox.values()] == [1, 1]
    assert alice.messaging.message_counter == 2


def test_eight_threads_sending_100_each_get_ids_1_to_800(start_robotd, alice: Robot) -> None:
    start_robotd("bob", "handlers:echo")
    barrier = threading.Barrier(8)

    def burst() -> None:
        barrier.wait()
        for _ in range(100):
            alice.send_message(to="bob", content="x")

    threads = [threading.Thread(target=burst) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(e["message"].id for e in alice.outbox.values()) == list(range(1, 801))
    wait_until(lambda: all(e["status"] == "replied" for e in alice.outbox.values()), timeout=30,
               message="every message answered")


def test_a_robot_whose_run_raises_nacks_with_the_reason(alice: Robot, script) -> None:
    alice.spawn(name="bob",
                api_base=script([{"error": {"status": 400, "message": "no such model"}}]))
    sent = alice.send_message(to="bob", content="work")
    with pytest.raises(Nacked, match="InferenceError") as caught:
        alice.outbox[sent.key]["delivery"].wait(30)
    assert "no such model" in str(caught.value)


def test_kill_9_mid_task_the_sender_hears_timeout(alice: Robot, broker: str, script) -> None:
    bob = alice.spawn(name="bob", api_base=script([{"content": "too late", "delay": 30}]))
    outcome: list[BaseException] = []
    asking = threading.Thread(
        target=lambda: _catch(outcome, lambda: alice.ask("bob", "work", timeout=20)))
    asking.start()
    wait_until(lambda: _in_flight(broker, "bob") == 1, timeout=15, message="the task is in flight")
    os.kill(bob.pid, signal.SIGKILL)
    asking.join(25)
    [error] = outcome
    assert isinstance(error, (DeliveryFailed, ReplyTimeout))
    assert "timeout" in str(error) or getattr(error, "reason", "") == "timeout"


def test_delegation_across_processes_returns_the_result_or_raises_the_error(
        alice: Robot, script) -> None:
    bob = alice.spawn(name="bob", api_base=script([{"content": "report ready"},
                                                    {"error": {"status": 400,
                                                               "message": "bad input"}}]))
    result = alice.delegate(to=bob, task="write the report", async_=True).value(timeout=30)
    failing = alice.delegate(to="bob", task="again", async_=True)
    with pytest.raises(RemoteError, match="InferenceError"):
        failing.value(timeout=30)
    assert (result.robot_name, result.reply,
            result.delegated_by) == ("bob", "report ready", "alice")


@pytest.mark.parametrize(("args", "said"), [
    (["--template", "no_such_template"], "template 'no_such_template' not found"),
    (["--system-prompt", "hi", "--provider", "no-such-provider"],
     "unknown provider 'no-such-provider'"),
    (["--system-prompt", "hi", "--prompts-dir", "/no/such/folder"], "is not a folder"),
    ([], "robotd needs something to host"),
])
def test_bad_robot_arguments_exit_78_with_one_clear_line(broker: str, args: list[str],
                                                         said: str) -> None:
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "x", "--broker", broker, *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 78
    assert said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_unreachable_broker_within_the_connect_timeout_exits_75(tmp_path) -> None:
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "x", "--broker",
            f"ipc://{tmp_path}/none.sock", "--system-prompt", "hi", "--serve", "--connect-timeout",
            "0.5"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 75
    assert "no broker answered" in done.stderr


def _catch(outcome: list[BaseException], call: Callable[[], Any]) -> None:
    try:
        call()
    except BaseException as exc:  # the test asserts on what was raised
        outcome.append(exc)


def _in_flight(url: str, name: str) -> int:
    rows = live(url, name)
    return rows[0]["in_flight"] if rows else -1
