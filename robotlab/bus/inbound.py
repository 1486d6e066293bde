"""What a client receives: the Message of a checked DELIVER, its fields set in one step.

Compiled with the rest of the member's path (:mod:`robotlab.bus.native`): a Message is built
for every message a member receives.
"""

from __future__ import annotations

from typing import Any, Final

from .message import Message

_new: Final = object.__new__


def delivered(header: dict[str, Any], content: Any, body: bytes | memoryview,
              extra: dict[str, Any]) -> Message:
    """The Message of a DELIVER whose ``header`` :func:`~robotlab.bus.protocol.decode` has checked
    (every field has its type already), with its unpacked ``content`` and the ``body`` it came in.

    The same frozen Message its constructor builds, its fields written straight into the new
    instance's ``__dict__``: the generated ``__init__`` of a frozen dataclass calls
    ``object.__setattr__`` once per field, on every message a member receives.
    """
    message: Message = _new(Message)
    fields: dict[str, Any] = message.__dict__
    fields["id"] = header["id"]
    fields["sender"] = header["from"]
    fields["sender_instance"] = header.get("from_instance", "")
    fields["to"] = header.get("to", "")
    fields["type"] = header.get("type", "message")
    fields["content"] = content
    fields["reply_to"] = header.get("reply_to")
    fields["deadline"] = header.get("deadline")
    fields["attempt"] = header.get("attempt", 1)
    fields["delivery"] = header["delivery"]
    fields["extra"] = extra
    fields["body"] = body
    return message
