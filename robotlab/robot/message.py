"""``RobotMessage``: the envelope robots exchange on the bus (Ruby: ``RobotLab::RobotMessage``).

It travels as the content of a bus message of type ``robot_message`` (plain data, see
:meth:`RobotMessage.to_dict`). On arrival, the sender's name comes from the broker's stamp on the
bus message, never from the payload: nobody can speak as another robot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ROBOT_MESSAGE_TYPE", "RobotMessage"]

ROBOT_MESSAGE_TYPE = "robot_message"
"""The bus message type that carries a RobotMessage."""


@dataclass(frozen=True)
class RobotMessage:
    """One message between robots.

    Attributes:
        id: the sender's per-robot counter (1, 2, ...); for a message from a plain bus client,
            the bus message id.
        from_: the sender's name (``from`` in ``to_dict``; Python reserves the word).
        content: a string or plain data (dict, list, numbers).
        in_reply_to: the key of the message this one answers, or None.
        attempt: on arrival, which delivery of it this is: 1, or more when the broker handed it
            out again (its first receiver crashed or was cut off before it settled). Not part
            of the message's identity, nor of ``to_dict``.
    """

    id: int | str
    from_: str
    content: Any
    in_reply_to: str | None = None
    attempt: int = field(default=1, compare=False)

    @property
    def redelivered(self) -> bool:
        """True when an earlier delivery of this message may have begun its work: a handler
        with effects outside the robot checks before doing them twice."""
        return self.attempt > 1

    @property
    def key(self) -> str:
        """``"<from>:<id>"``: what a reply names in ``in_reply_to`` and what the outbox is keyed
        by."""
        return f"{self.from_}:{self.id}"

    @property
    def is_reply(self) -> bool:
        """True when this message answers another (Ruby: ``reply?``)."""
        return self.in_reply_to is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, with the Ruby key ``from``."""
        return {"id": self.id, "from": self.from_, "content": self.content,
                "in_reply_to": self.in_reply_to}

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, sender: str | None = None,
                  attempt: int = 1) -> RobotMessage:
        """Rebuild from ``to_dict`` output.

        ``sender`` (the broker's stamp) wins over ``data["from"]``; ``attempt`` is the
        delivery's.
        """
        return cls(data.get("id", 0), sender if sender is not None else str(data.get("from", "")),
                   data.get("content"), data.get("in_reply_to"), attempt)

    @classmethod
    def build(cls, id: int | str, from_: str, content: Any,
              in_reply_to: str | None = None) -> RobotMessage:
        """Make a message (``in_reply_to`` defaults to None, as in Ruby)."""
        return cls(id=id, from_=from_, content=content, in_reply_to=in_reply_to)
