"""The bus with real processes: a broker and robotds started by fixtures, then hurt on purpose."""

from __future__ import annotations

import os
import random
import signal
import sys
import threading

import pytest
import zmq

from robotlab import bus
from robotlab.bus.wire import protocol
from robotlab.errors import DeliveryTimeout, Nacked, PeerUnavailable
from tests.process.conftest import live, stop
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def in_flight(url: str, name: str) -> int:
    return sum(row["in_flight"] for row in live(url, name))


def test_request_reply_between_processes(broker: str, start_robotd) -> None:
    bob = start_robotd("bob")
    with bus.connect(broker, name="alice") as alice:
        reply = alice.request("bob", "ping", timeout=5)
    assert reply.content == f"ping (from {bob.pid})"


def test_kill_9_mid_delivery_tells_the_sender(broker: str, start_robotd) -> None:
    bob = start_robotd("bob", "handlers:hang")
    with bus.connect(broker, name="alice") as alice:
        tracker = alice.send("bob", "work")
        wait_until(lambda: in_flight(broker, "bob") == 1, message="delivery in flight")
        os.kill(bob.pid, signal.SIGKILL)
        with pytest.raises(DeliveryTimeout, match="went silent|disconnected") as info:
            tracker.wait(10)
        letters = alice.admin("dlq.list")
    assert [d["dlq_id"] for d in letters] == [info.value.dlq_id]


def test_kill_9_mid_delivery_redelivers_an_idempotent_message(broker: str, start_robotd) -> None:
    stuck = start_robotd("bob", "handlers:hang_if_told", env={"HANG": "1"})
    healthy = start_robotd("bob", "handlers:hang_if_told")
    with bus.connect(broker, name="alice") as alice:
        tracker = alice.send_request("bob", "job", any=True, idempotent=True)
        wait_until(lambda: in_flight(broker, "bob") == 1, message="first attempt in flight")
        os.kill(stuck.pid, signal.SIGKILL)
        reply = tracker.reply(15)
    assert reply.content == f"job (from {healthy.pid})"


def test_broker_restart_clients_and_robotds_reconnect(endpoint: str, start_broker,
                                                      processes) -> None:
    first = start_broker(endpoint)
    from tests.process.conftest import broker_argv  # same command line for the second broker

    robotd = processes.start([*_robotd_argv(endpoint, "bob")], name="robotd-bob")
    wait_until(lambda: live(endpoint, "bob"), timeout=15, message="bob live")
    with bus.connect(endpoint, name="alice") as alice:
        assert "before" in alice.request("bob", "before", timeout=5).content
        assert stop(first) == 0
        wait_until(lambda: not alice.connected, timeout=10,
                   message="alice notices the broker is gone")
        processes.start(broker_argv(endpoint), name="broker-again")
        wait_until(lambda: alice.connected, timeout=15, message="alice reconnected")
        wait_until(lambda: live(endpoint, "bob"), timeout=15, message="bob reconnected")
        assert alice.request("bob", "after", timeout=5).content == f"after (from {robotd.pid})"


def _robotd_argv(url: str, name: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", url, "--handler",
            "handlers:echo"]


def test_a_handler_that_raises_comes_back_nacked(broker: str, start_robotd) -> None:
    start_robotd("grumpy", "handlers:refuse")
    with bus.connect(broker, name="alice") as alice:
        with pytest.raises(Nacked, match="ValueError: refusing 'x'"):
            alice.send("grumpy", "x").wait(5)


def test_sigterm_finishes_the_delivery_in_hand_then_exits_0(broker: str, start_robotd,
                                                            tmp_path) -> None:
    bob = start_robotd("bob", "handlers:slow")
    started = tmp_path / "started"
    with bus.connect(broker, name="alice") as alice:
        tracker = alice.send_request("bob", f"0.5:{started}")
        wait_until(started.exists, message="the handler started")
        bob.popen.send_signal(signal.SIGTERM)
        assert tracker.reply(10).content == "slept 0.5"
    assert bob.popen.wait(10) == 0
    wait_until(lambda: not live(broker, "bob"), message="bob said BYE")


def test_fuzzed_frames_never_stop_the_broker(broker: str) -> None:
    rng = random.Random(1234)
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(broker)
    sent = 3000
    for _ in range(sent):
        sock.send_multipart(_random_frames(rng))
    sock.close(linger=5000)  # deliver everything queued before closing

    def rejected(stats: dict) -> int:
        return sum(v for k, v in stats.items() if k.startswith(("error_", "dropped_")))

    with bus.connect(broker, name="alice") as alice:
        # Every fuzzed message is refused with an error reply or counted as dropped.
        wait_until(lambda: rejected(alice.admin("stats")) >= sent, timeout=30,
                   message="all fuzz frames refused")
        stats = alice.admin("stats")
        assert alice.admin("ping")["peers"] >= 1
    assert stats.get("internal_errors", 0) == 0


def _random_frames(rng: random.Random) -> list[bytes]:
    def blob() -> bytes:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 12)))

    shapes = [
        lambda: [blob() for _ in range(rng.randint(1, 6))],
        lambda: [protocol.SIGNATURE + bytes([rng.randint(0, 20)]) + blob(), blob()],
        lambda: [protocol.SIGNATURE + bytes([rng.randint(0, 20)])
                 + rng.getrandbits(32).to_bytes(4, "big") + blob()],
        lambda: [protocol.encode(rng.choice(list(protocol.Command)),
                                 rng.choice([1, "x", [], {"id": 3}, {"to": None}]), blob())[0]],
        lambda: [b"RLB" + bytes([rng.randint(0, 5)]), b"\x01", protocol.pack({"name": 1}), b""],
    ]
    return rng.choice(shapes)()


FAN_MEMBERS = """
import sys, threading
from robotlab import bus
members = [bus.connect(sys.argv[1], name="fan", role="robot", timeout=60) for _ in range(16)]
for member in members:
    member.on_message(lambda message: None, inline=True)
threading.Event().wait()
"""


def test_a_fan_out_never_waits_out_a_poll_timeout(endpoint: str, start_broker, processes) -> None:
    # Any send on a socket may take the edge of its edge-triggered fd. A member's I/O thread that
    # flushed an ACK just as the next DELIVER came slept its whole poll timeout with that DELIVER
    # unread (found by bench/bus_growth.py: fan-out at 0.05x raw on a quiet machine). With a
    # 60 s heartbeat that timeout is 20 s, past each wait below: a message held up by one fails.
    start_broker(endpoint, "--heartbeat", "60", "--liveness", "3", "--ack-timeout", "60")
    processes.keep([sys.executable, "-c", FAN_MEMBERS, endpoint],
                   lambda proc: len(live(endpoint, "fan")) == 16, name="fan-members", timeout=120)
    with bus.connect(endpoint, name="fan-sender", timeout=10) as sender:
        for i in range(300):
            assert len(sender.send("fan", i).wait(15).instances) == 16  # a few ms each
        window = [sender.send("fan", i) for i in range(8)]
        for i in range(300):  # eight outstanding, as the bench sends them
            assert len(window.pop(0).wait(15).instances) == 16
            window.append(sender.send("fan", i))


def test_an_admin_request_cut_short_by_close_is_peer_unavailable(start_broker,
                                                                 endpoint: str) -> None:
    broker = start_broker(endpoint)
    client = bus.connect(endpoint, name="asker", timeout=5)
    os.kill(broker.pid, signal.SIGSTOP)
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            client.admin("ps", timeout=600)
        except BaseException as exc:  # what the caller gets is the test's subject
            failed.append(exc)

    asking = threading.Thread(target=ask)
    try:
        asking.start()
        wait_until(lambda: client._admin.waiting(), message="the request in flight")
        client.close(bye=False)
        asking.join(10)
    finally:
        os.kill(broker.pid, signal.SIGCONT)
    assert not asking.is_alive(), "close() left the caller waiting"
    assert isinstance(failed[0], PeerUnavailable), repr(failed[0])
    assert "did not answer 'ps': the client was closed" in str(failed[0])
    with pytest.raises(PeerUnavailable, match="this client is closed"):
        client.admin("ps", timeout=600)
