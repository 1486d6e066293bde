"""A broker process stopping: what had come in before the stop is routed and sent, then it
closes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq

from robotlab import bus
from robotlab.broker import Broker, stopping
from robotlab.bus import BrokerConfig
from tests.waiting import wait_until


def turn_until(broker: Broker, condition: Callable[[], Any], message: str) -> None:
    """Run the broker's loop on this thread, one pass at a time, until ``condition`` holds.

    A pass is run only once input waits: with nothing to read, one would wait out the loop's
    timer (a quarter of the 30 s heartbeat) while the condition came true meanwhile.
    """
    def turned() -> Any:
        assert broker.socket is not None and broker._input is not None
        # the poll reads the socket's events itself, taking the edge the pass would wait for
        if broker._input.pending or broker.socket.poll(50, zmq.POLLIN):
            broker._input.pending = True
            broker.turn()
        return condition()

    wait_until(turned, timeout=30, message=message)


def test_a_stopping_broker_routes_the_reply_that_came_in_before_the_stop(tmp_path: Path) -> None:
    # A long heartbeat: while the loop is held, the reply is the only frame that comes in.
    broker = Broker(BrokerConfig(bind=f"ipc://{tmp_path}/broker.sock", heartbeat=30.0),
                    stopping.own())
    url = broker.bind()
    handling, release = threading.Event(), threading.Event()

    def handler(message: bus.Message) -> str:
        handling.set()
        release.wait(30)  # while the test turns the loop, nothing comes back from bob
        return "done"

    robot = bus.BusClient(url, name="bob", role="robot", keys=False)
    robot.on_message(handler).start(timeout=None)
    asker = bus.BusClient(url, name="alice", keys=False).start(timeout=None)
    try:
        turn_until(broker, lambda: robot.connected and asker.connected, "both welcomed")
        tracker = asker.send_request("bob", "go")
        turn_until(broker, handling.is_set, "the request reached bob")
        # Given bob's reply waiting in the broker's socket, not read yet
        release.set()
        wait_until(lambda: not robot.dispatcher.holding(), message="bob replied")
        wait_until(lambda: broker.socket is not None and broker.socket.poll(0, zmq.POLLIN),
                   message="the reply came in")
        # When the broker is stopped before its loop reads it
        broker.stop()
        broker.run()
        # Then the reply was routed to alice all the same
        assert tracker.reply(10).content == "done"
    finally:
        asker.close(bye=False)
        robot.close(bye=False)
        stopping.end(broker.context)
