"""The Message a member builds from a DELIVER: every field set, and the same frozen value as one
built by its constructor."""

from __future__ import annotations

import pytest

from robotlab.bus.member.incoming_frames import delivered
from robotlab.bus.member.message import FIELDS, Message


def test_a_delivered_message_sets_every_field_and_equals_one_built_by_the_constructor() -> None:
    header = {"delivery": 7, "id": "e1.3", "from": "alice", "from_instance": "a-1", "to": "bob",
              "type": "request", "reply_to": "e2.9", "deadline": 12.5, "attempt": 2}
    message = delivered(header, {"n": 1}, b"\x81\xa1n\x01", {"traceparent": "00-x"})
    assert all(hasattr(message, name) for name in FIELDS)
    assert message == Message(id="e1.3", sender="alice", sender_instance="a-1", to="bob",
                              type="request",
                              content={"n": 1}, reply_to="e2.9", deadline=12.5, attempt=2,
                              delivery=7, extra={"traceparent": "00-x"})
    assert message.body == b"\x81\xa1n\x01" and message.is_reply and message.key == "alice:e1.3"
    with pytest.raises(AttributeError):
        message.content = None  # type: ignore[misc]


def test_a_delivered_message_takes_the_defaults_of_absent_fields() -> None:
    message = delivered({"delivery": 0, "id": "e1.1", "from": "alice"}, None, b"", {})
    assert (message.sender_instance, message.to, message.type, message.reply_to,
            message.deadline, message.attempt) == ("", "", "message", None, None, 1)
    assert not message.is_reply and message.replace(content=1).content == 1
