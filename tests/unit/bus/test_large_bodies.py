"""Large bodies: the broker forwards them as they came, never decoding or copying them."""

from __future__ import annotations

import os

import zmq

from robotlab.bus import BrokerConfig, EmbeddedBroker, protocol
from robotlab.bus.protocol import Command
from tests.hostile import Raw

MIB = 1024 * 1024


def test_a_4_mib_body_that_is_not_msgpack_passes_the_broker_as_a_view_of_its_frame() -> None:
    broker = EmbeddedBroker(config=BrokerConfig(heartbeat=10.0)).start()  # raw peers send no heartbeats
    alice, bob = Raw(broker.url), Raw(broker.url)
    try:
        assert alice.hello("alice", "a-1").command == Command.WELCOME
        assert bob.hello("bob", "b-1").command == Command.WELCOME
        body = b"\xc1" + os.urandom(4 * MIB)  # 0xc1 is never valid msgpack: decoding it would fail
        alice.socket.send_multipart(protocol.encode(Command.SEND, {"id": "m.1", "to": "bob", "type": "message"}, body))
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
