"""RobotMessage: the envelope, its key and its plain-data form."""

from __future__ import annotations

import pytest

from robotlab.robot.message import RobotMessage


def test_key_names_the_sender_and_id_and_a_reply_knows_it_is_one() -> None:
    message = RobotMessage.build(3, "alice", "ping")
    reply = RobotMessage.build(1, "bob", "pong", in_reply_to=message.key)
    assert message.key == "alice:3"
    assert not message.is_reply
    assert reply.is_reply and reply.in_reply_to == "alice:3"


def test_to_dict_uses_the_ruby_key_from() -> None:
    data = RobotMessage(7, "alice", {"task": "x"}, "bob:2").to_dict()
    assert data == {"id": 7, "from": "alice", "content": {"task": "x"}, "in_reply_to": "bob:2"}


def test_from_dict_trusts_the_broker_stamp_over_the_payload() -> None:
    forged = {"id": 1, "from": "mallory", "content": "hi", "in_reply_to": None}
    assert RobotMessage.from_dict(forged, sender="alice").from_ == "alice"
    assert RobotMessage.from_dict(forged) == RobotMessage(1, "mallory", "hi")


def test_it_is_immutable() -> None:
    message = RobotMessage(1, "alice", "hi")
    with pytest.raises(AttributeError):
        message.content = "changed"  # type: ignore[misc]
