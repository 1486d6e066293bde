"""``robotlab human``: a person on the bus, driven through the terminal's stdin, asked by a real
client."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from robotlab import Robot, bus
from robotlab.errors import DeliveryFailed
from robotlab.robot.human import ask_human
from tests.process.person import Person
from tests.waiting import wait_until

pytestmark = pytest.mark.process


@pytest.fixture
def person(broker: str, tmp_path: Path) -> Iterator:
    started: list[Person] = []

    def start(name: str = "alice") -> Person:
        started.append(Person(broker, name, tmp_path / f"{name}-{len(started)}.log"))
        return started[-1]

    yield start
    for one in started:
        one.stop()


def on_the_bus(client: bus.BusClient, name: str) -> bool:
    return any(row["name"] == name for row in client.admin("ps", all=True))


@pytest.fixture
def ops(broker: str) -> Iterator[bus.BusClient]:
    with bus.connect(broker, name="ops", timeout=10) as client:
        yield client


def test_a_question_reaches_her_and_her_typed_answer_is_the_reply(
        person, ops: bus.BusClient) -> None:
    # Given alice at her terminal
    alice = person()
    # When ops asks her, and she types a line
    answer = ask_human(ops, "alice", "Deploy the release now?", timeout=60, default="no")
    shown = alice.sees("ops asks")
    alice.types("yes, go ahead")
    # Then she saw the question, numbered, with its default, and her line is the answer
    assert shown.startswith("[1] ops asks (id ops:") and shown.endswith(
        "default: no): Deploy the release now?")
    assert answer.result(30) == "yes, go ahead"
    alice.sees("answered [1] to ops")


def test_reply_n_answers_an_older_question_and_a_plain_line_the_newest(
        person, ops: bus.BusClient) -> None:
    alice = person()
    first = ask_human(ops, "alice", "Which branch?", timeout=60)
    alice.sees("[1] ops asks")
    second = ask_human(ops, "alice", "Which port?", timeout=60)
    alice.sees("[2] ops asks")
    alice.types("8080")
    assert second.result(30) == "8080"
    alice.types("reply 1 main")
    assert first.result(30) == "main"


def test_unanswered_in_time_the_asker_gets_the_default_and_her_late_answer_is_not_sent(
        person, ops: bus.BusClient) -> None:
    alice = person()
    answer = ask_human(ops, "alice", "Restart the broker?", timeout=1, default="not now")
    alice.sees("[1] ops asks")
    assert answer.result(30) == "not now"
    alice.types("reply 1 yes")
    assert "ops stopped waiting for [1]" in alice.sees("stopped waiting")


def test_what_arrives_while_she_is_away_is_shown_when_she_comes_back(
        person, ops: bus.BusClient) -> None:
    # Given alice has been on the bus once and left
    assert person().leaves() == 0
    wait_until(lambda: not on_the_bus(ops, "alice"), timeout=30, message="alice gone from ps --all")
    # When a note and a question are sent while she is away
    ops.send("alice", "the nightly build is green", hold=60)
    answer = ask_human(ops, "alice", "Ship it?", timeout=60, default="no")
    # Then both are on her screen when she joins again, and her answer still reaches ops
    alice = person()
    assert "ops says (id ops:" in alice.sees("the nightly build is green")
    alice.sees("[1] ops asks")
    alice.types("ship it")
    assert answer.result(30) == "ship it"


def test_messages_nobody_asked_for_are_shown_with_who_and_id(person, ops: bus.BusClient) -> None:
    alice = person()
    tracker = ops.send("alice", {"event": "deploy finished"}).wait(10)
    shown = alice.sees("deploy finished")
    assert shown == f'ops says (id ops:{tracker.id}): {{"event": "deploy finished"}}'
    alice.types("hello?")
    alice.sees("no open question to answer")


def test_a_question_to_a_name_never_seen_fails_at_once(ops: bus.BusClient) -> None:
    answer = ask_human(ops, "nobody-here", "Anyone?", timeout=60, default="no")
    with pytest.raises(DeliveryFailed, match="undeliverable"):
        answer.result(30)


def test_a_name_no_member_may_have_is_a_usage_error(broker: str) -> None:
    argv = [sys.executable, "-m", "robotlab.cli", "human", "--name", "a b", "--broker", broker]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 64, done.stderr
    assert "Traceback" not in done.stderr


def test_a_robot_asks_her_with_ask_human_and_with_its_blocking_ask(person, broker: str) -> None:
    alice = person()
    robot = Robot(name="planner", bus=broker, model="openai/scripted")
    try:
        answer = robot.ask_human("alice", "Which of the two plans?", timeout=60,
                                 default="the first")
        alice.sees("[1] planner asks")
        alice.types("the second")
        assert answer.result(30) == "the second"
        # robot.ask blocks on its own thread: she answers it meanwhile
        with ThreadPoolExecutor(1) as pool:
            asked = pool.submit(robot.ask, "alice", "Ready?", 60)
            assert alice.sees("[2] planner asks").endswith("): Ready?")
            alice.types("ready")
            reply = asked.result(30)
        assert (reply.from_, reply.content, reply.in_reply_to) == ("alice", "ready", "planner:1")
        assert robot.outbox["planner:1"]["status"] == "replied"
    finally:
        robot.leave_bus()
