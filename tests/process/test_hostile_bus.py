"""The bus against a hostile local process: one test per way such a process could break it.

A real broker process and real robotds; the attacker is a raw socket (tests/process/hostile.py).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from robotlab import bus
from robotlab.bus.wire.protocol import Command, ErrorCode
from robotlab.cli.robotlab_cli import main
from robotlab.errors import DeliveryTimeout, Undeliverable
from tests.hostile import Raw, malformed_headers
from tests.process.conftest import live
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def stats(url: str) -> dict:
    with bus.connect(url, name="test-stats") as client:
        return client.admin("stats")


def test_1_a_replay_cannot_choose_the_id_a_senders_next_message_will_carry(
        broker: str, start_robotd) -> None:
    # Given alice's message to a missing robot in the DLQ, and bob live
    bob = start_robotd("bob")
    with bus.connect(broker, name="alice") as alice, bus.connect(broker, name="mallory") as mallory:
        lost = alice.send("nobody", "lost")
        with pytest.raises(Undeliverable):
            lost.wait(5)
        dlq_id = mallory.admin("dlq.list")[0]["dlq_id"]
        # When mallory replays it under the id alice's next message will carry (ids count up)
        epoch, number = lost.id.rsplit(".", 1)
        next_id = f"{epoch}.{int(number) + 1}"
        result = mallory.admin("dlq.replay", dlq_id=dlq_id, id=next_id, ref="m.1")
        # Then the broker made its own id, and alice's real message still runs
        assert result["id"].startswith("replay-") and result["id"] != next_id
        reply = alice.request("bob", "real", timeout=5)
    assert reply.content == f"real (from {bob.pid})"


def test_2_every_malformed_header_is_refused_and_the_robotd_still_answers(
        broker: str, start_robotd) -> None:
    bob = start_robotd("bob")
    raw = Raw(broker)
    try:
        assert raw.hello("mallory", "m-1").command == Command.WELCOME
        shapes = malformed_headers()
        # reply_to as a dict or a list once killed the robotd's bus thread
        assert (Command.SEND,
                {"id": "m.1", "to": "bob", "type": "message", "reply_to": {"a": 1}}) in shapes
        for command, header in shapes:
            raw.send(command, header, "poison")
            error = raw.expect(Command.ERROR)
            assert error.header["code"] == ErrorCode.BAD_HEADER, (command, header, error.header)
        # Unknown fields of any shape travel to the robot, which copes with them
        raw.send(Command.SEND, {"id": "m.2", "to": "bob", "weird": {"reply_to": [1]}}, "odd")
        assert raw.expect(Command.DELIVER).header["reply_to"] == "m.2"
    finally:
        raw.close()
    with bus.connect(broker, name="alice") as alice:
        assert alice.request("bob", "still there?",
                             timeout=5).content == f"still there? (from {bob.pid})"
    counters = stats(broker)
    assert counters.get("internal_errors", 0) == 0
    assert counters["error_bad_header"] == len(shapes)


def test_3_a_second_hello_on_one_connection_replaces_the_first(broker: str, start_robotd) -> None:
    bob = start_robotd("bob")
    raw = Raw(broker)
    try:
        for i in range(50):  # a HELLO that kept the old one would leave a ghost, ~1 KB each
            assert raw.hello("bob", f"ghost-{i}").command == Command.WELCOME
        assert raw.hello("carol", "carol-1").command == Command.WELCOME
        with bus.connect(broker, name="alice") as alice:
            rows = alice.admin("ps", all=True)
            assert [r["instance"] for r in rows if r["name"] == "bob"] == [
                live(broker, "bob")[0]["instance"]]
            assert alice.admin("ping")["peers"] == 3  # bob, carol's connection, alice
            tracker = alice.send("bob", "fan out").wait(5)
        assert tracker.status == "delivered" and len(tracker.instances) == 1
    finally:
        raw.close()
    assert bob.popen.poll() is None


def test_4_a_live_instance_id_cannot_be_claimed_by_another_connection(
        broker: str, start_robotd) -> None:
    bob = start_robotd("bob", "handlers:slow")
    instance = live(broker, "bob")[0]["instance"]
    raw = Raw(broker)
    try:
        with bus.connect(broker, name="alice") as alice:
            tracker = alice.send_request("bob", "0.5")
            refused = raw.hello("bob", instance)
            assert refused.header["code"] == ErrorCode.CONFLICT, refused.header
            assert "belongs to another live connection" in refused.header["detail"]
            assert tracker.reply(5).content == "slept 0.5"  # bob, not mallory, got it
    finally:
        raw.close()
    assert [r["pid"] for r in live(broker, "bob")] == [bob.pid]


def test_6_a_reply_that_cannot_cross_is_nacked_with_the_reason(broker: str, start_robotd) -> None:
    start_robotd("bob", "handlers:unsendable")
    result = CliRunner().invoke(main, ["send", "--to", "bob", "--broker", broker, "--wait",
                                       "--timeout", "10", "x"])
    assert result.exit_code == 69, result.output
    assert "nacked" in result.output and "BoundaryError" in result.output
    assert "function" in result.output


def test_7_a_malformed_to_instance_is_refused_not_an_internal_error(
        broker: str, start_robotd) -> None:
    start_robotd("bob")
    raw = Raw(broker)
    try:
        raw.hello("mallory", "m-7")
        raw.send(Command.SEND, {"id": "m.7", "to": "bob", "to_instance": ["a", "b"]}, "x")
        error = raw.expect(Command.ERROR)
    finally:
        raw.close()
    assert error.header["code"] == ErrorCode.BAD_HEADER and "to_instance" in error.header["detail"]
    assert error.header.get("ref") == "m.7"
    assert stats(broker).get("internal_errors", 0) == 0


def test_8_a_hung_handler_is_timed_out_past_the_maximum_handling_time(
        start_broker, endpoint: str, processes) -> None:
    import sys

    start_broker(endpoint, "--max-handling", "2")
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "sloth", "--broker", endpoint,
            "--handler", "handlers:hang"]
    processes.start(argv, name="robotd-sloth")
    wait_until(lambda: live(endpoint, "sloth"), timeout=15, message="sloth is live")
    with bus.connect(endpoint, name="alice") as alice:
        tracker = alice.send("sloth", "forever")  # no deadline: only the broker's maximum bounds it
        oldest = wait_until(lambda: live(endpoint, "sloth")[0]["oldest"],
                            message="ps shows the delivery's age")
        assert oldest > 0
        with pytest.raises(DeliveryTimeout, match="maximum handling time of 2s"):
            tracker.wait(10)
        letters = alice.admin("dlq.list")
    assert [(d["reason"], d["to"]) for d in letters] == [("timeout", "sloth")]
    assert live(endpoint, "sloth")[0]["oldest"] is None


def test_ps_shows_the_oldest_delivery_column(broker: str, start_robotd) -> None:
    start_robotd("bob")
    result = CliRunner().invoke(main, ["ps", "--broker", broker, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["oldest"] is None
