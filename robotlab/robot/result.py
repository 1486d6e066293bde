"""``RobotResult``: what one ``Robot.run`` returns, as plain data that crosses processes."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["RobotResult"]


@dataclass
class RobotResult:
    """The outcome of one run.

    Attributes:
        robot_name: the robot that produced it.
        reply: the final text (content, else thinking text, else the current turn's last
            assistant text), or None.
        input_tokens: prompt tokens summed over every round trip of the run.
        output_tokens: completion tokens summed over every round trip of the run.
        cost: dollars summed over every round trip (0.0 when the provider has no price).
        duration: seconds the run took.
        id: a fresh uuid4 string.
        created_at: Unix time the result was made.
        delegated_by: the robot that delegated this run, if any.
        tool_calls: the tool calls made during the run, as ``{"name", "arguments", "result"}``.
        stop_reason: why the run ended early, when it did (None normally): ``max_tokens`` when the
            final reply was cut by the output-token limit.
        truncated: True when any reply of the run was cut by the output-token limit
            (``max_tokens``; the provider's ``finish_reason`` was ``length``). A WARNING naming the
            limit is logged too (logger ``robotlab.robot``).
        parsed: the reply validated against ``with_schema`` (a model instance, or the parsed
            JSON for a JSON schema); None without a schema.
        raw: the last model reply as robotlab's own ``LLMReply`` record (content, tool calls,
            reasoning, usage, cost, model), not the provider's response object (not serialised).
    """

    robot_name: str
    reply: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    duration: float | None = None
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    created_at: float = field(default_factory=time.time)
    delegated_by: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    truncated: bool = False
    parsed: Any = None
    raw: Any = field(default=None, repr=False, compare=False)

    @property
    def last_text_content(self) -> str | None:
        """Alias of ``reply`` (the Ruby name)."""
        return self.reply

    @property
    def output(self) -> list[dict[str, str]]:
        """The output as a list of messages: one text message, or none."""
        return [] if self.reply is None else [{"type": "text", "content": self.reply}]

    def has_tool_calls(self) -> bool:
        """True when the run made tool calls."""
        return bool(self.tool_calls)

    def stopped(self) -> bool:
        """True when the run ended early."""
        return self.stop_reason is not None

    def checksum(self) -> str:
        """SHA-256 of the output, tool calls and creation second."""
        payload = json.dumps([self.output, self.tool_calls, int(self.created_at)], sort_keys=True,
                             default=str)
        return hashlib.sha256(payload.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (str, numbers, None, lists, dicts): safe for msgpack and JSON."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "raw"}
        if hasattr(data["parsed"], "model_dump"):
            data["parsed"] = data["parsed"].model_dump(mode="json")
        return data

    def export(self) -> dict[str, Any]:
        """``to_dict`` without debug fields and zero token counts."""
        data = self.to_dict()
        for key in ("input_tokens", "output_tokens"):
            if not data[key]:
                del data[key]
        if data["parsed"] is None:
            del data["parsed"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RobotResult:
        """Rebuild from ``to_dict`` output; unknown keys are ignored."""
        known = {f.name for f in fields(cls)} - {"raw"}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def from_error(cls, robot_name: str, error: BaseException,
                   duration: float | None = None) -> RobotResult:
        """The result a pipeline step reports when its robot raised.

        Its reply is ``Error: <Class>: <msg>``.
        """
        return cls(robot_name, reply=f"Error: {type(error).__name__}: {error}", duration=duration)
