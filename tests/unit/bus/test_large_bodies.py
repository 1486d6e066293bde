"""Large bodies: the broker forwards them as they came, never decoding or copying them."""

from __future__ import annotations

import os

import zmq

from robotlab.bus import BrokerConfig, EmbeddedBroker
from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Command
from tests.hostile import Raw

MIB = 1024 * 1024


def test_a_4_mib_body_that_is_not_msgpack_passes_the_broker_as_a_view_of_its_frame() -> None:
    # raw peers send no heartbeats
    broker = EmbeddedBroker(config=BrokerConfig(heartbeat=10.0)).start()
    alice, bob = Raw(broker.url), Raw(broker.url)
    try:
        assert alice.hello("alice", "a-1").command == Command.WELCOME
        assert bob.hello("bob", "b-1").command == Command.WELCOME
        body = b"\xc1" + os.urandom(4 * MIB)  # 0xc1 is never valid msgpack: decoding it would fail
        alice.socket.send_multipart(protocol.encode(Command.SEND,
                                                    {"id": "m.1", "to": "bob", "type": "message"},
                                                    body))
        delivered = bob.expect(Command.DELIVER, timeout=10)
        assert delivered.body == body
        # Unacked, the broker still holds it: a view of the frame it received, not a copy.
        record = broker._broker.deliveries.active[("a-1", "m.1")]
        assert isinstance(record.body, memoryview) and isinstance(record.body.obj, zmq.Frame)
        assert len(record.body) == len(body)
    finally:
        alice.close()
        bob.close()
        broker.stop()


def test_a_4_mib_request_and_its_reply_round_trip_through_clients(member) -> None:
    alice, bob = member("alice"), member("bob")
    bob.on_message(lambda message: message.content[::-1])
    content = os.urandom(4 * MIB)
    assert alice.request("bob", content, timeout=30).content == content[::-1]


def test_an_echo_of_a_4_mib_body_sends_back_the_frame_it_came_in(member) -> None:
    alice, bob = member("alice"), member("bob")
    taken: list = []
    bob.on_message(lambda message: (taken.append(message), message.content)[1])
    content = os.urandom(4 * MIB)
    reply = alice.request("bob", content, timeout=30)
    assert reply.content == content
    # Received without a copy: unpacked from a view of the zmq.Frame the body came in ...
    (message,) = taken
    assert isinstance(message.body, memoryview) and isinstance(message.body.obj, zmq.Frame)
    # ... and answered with that same frame, not packed again (the reply cache holds what was sent).
    sent, kind = bob.dispatcher._replies[(alice.instance, message.id)]
    assert sent is message.body and kind == "reply"
    # The requester's reply, too, is unpacked from the frame it arrived in.
    assert isinstance(reply.body, memoryview) and isinstance(reply.body.obj, zmq.Frame)


def test_a_large_body_the_handler_changed_is_packed_again(member) -> None:
    alice, bob = member("alice"), member("bob")

    def handler(message):
        message.content["note"] = "seen"  # the same object, changed: its old bytes would be wrong
        return message.content

    bob.on_message(handler)
    content = {"blob": os.urandom(4 * MIB)}
    assert alice.request("bob", content, timeout=30).content == {**content, "note": "seen"}
