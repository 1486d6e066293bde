"""When the broker's ROUTER must be drained (broker/router.py Readiness), on real sockets over
inproc.

The ROUTER's fd announces input only once a ZMQ_EVENTS read has found none, and a send
processes the socket's commands, which can take the announcement of a message that came
after the last read. These tests make that happen deterministically (inproc delivers within
the sender's call) and check that the broker's loop is never left waiting on a hidden message.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import zmq

from robotlab.broker.router import Readiness
from robotlab.bus.wire import protocol


@pytest.fixture
def sockets() -> Iterator[tuple[zmq.Socket, zmq.Socket, int]]:
    context = zmq.Context.instance()
    url = f"inproc://readiness-{uuid.uuid4().hex}"
    router, dealer = context.socket(zmq.ROUTER), context.socket(zmq.DEALER)
    router.bind(url)
    dealer.setsockopt(zmq.ROUTING_ID, b"peer")
    dealer.connect(url)
    wake_r, wake_w = os.pipe()
    yield router, dealer, wake_r
    for sock in (router, dealer):
        sock.close(linger=0)
    os.close(wake_r)
    os.close(wake_w)


def drain(router: zmq.Socket) -> int:
    count = 0
    while protocol.readable(router):
        router.recv_multipart(zmq.NOBLOCK)
        count += 1
    return count


def test_a_new_socket_is_drained_before_anything_waits(sockets) -> None:
    router, dealer, wake_r = sockets
    dealer.send(b"hello")
    ready = Readiness(router, wake_r)
    assert ready.pending and ready.wait(5_000)  # returns at once: nothing was read yet
    assert drain(router) == 1


def test_input_after_a_drain_is_announced_by_the_fd(sockets) -> None:
    router, dealer, wake_r = sockets
    ready = Readiness(router, wake_r)
    assert drain(router) == 0
    ready.pending = False  # the drain ended on a ZMQ_EVENTS read that found nothing
    assert not ready.wait(0)
    dealer.send(b"one")
    assert ready.wait(5_000) and drain(router) == 1


def test_a_send_that_takes_the_edge_leaves_the_socket_pending(sockets) -> None:
    router, dealer, wake_r = sockets
    dealer.send(b"hello")  # the router learns the peer's identity
    ready = Readiness(router, wake_r)
    assert drain(router) == 1
    ready.pending = False
    dealer.send(b"came after the drain")
    # processes the commands: the edge is gone
    router.send_multipart([b"peer", b"a send of the turn's end"])
    assert not ready.wait(0), "the fd no longer shows the waiting message (what sent() is for)"
    ready.sent()
    assert ready.pending and ready.wait(5_000)
    assert drain(router) == 1
