"""The crew as tools: one ``ask_<name>`` per live robot name, read from the broker's ``ps`` rows,
and a call's message sent over the bus to that robot, its reply the result.

Synchronous and protocol-free: ``mcp_serve.py`` runs these calls on worker threads and turns
their results and errors into MCP's. Everything here goes through one :class:`BusClient`, so
the server is a member of the bus like ``robotlab send`` is, with its own name and key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from robotlab.bus import BusClient
from robotlab.errors import ToolNotFoundError

PREFIX = "ask_"
"""Every tool's name is this and a robot's name."""
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,124}")
"""Robot names that make a tool name MCP clients accept as it is (letters, digits, ``_.-``;
the spec's 128 characters with the prefix). Others are left out and said so, never renamed:
a renamed tool would ask a robot whose name nobody typed."""


@dataclass(frozen=True)
class RobotTool:
    """One live robot name as a tool."""

    robot: str
    instances: int

    @property
    def name(self) -> str:
        """The tool's name: ``ask_<robot>``."""
        return PREFIX + self.robot

    @property
    def description(self) -> str:
        """What an MCP client shows for the tool."""
        many = f" (one of its {self.instances} instances answers)" if self.instances > 1 else ""
        return (f"Ask the robot '{self.robot}' on the robotlab bus: the message is sent to "
                f"it{many} and its reply comes back as the result.")


def robot_tools(rows: list[dict[str, Any]]) -> tuple[list[RobotTool], list[str]]:
    """The tools of the broker's ``ps`` rows (robots only), and the names no tool can carry."""
    counts: dict[str, int] = {}
    for row in rows:
        if row.get("role", "robot") == "robot":
            counts[row["name"]] = counts.get(row["name"], 0) + 1
    tools = [RobotTool(name, n) for name, n in sorted(counts.items()) if TOOL_NAME.fullmatch(name)]
    left_out = sorted(name for name in counts if not TOOL_NAME.fullmatch(name))
    return tools, left_out


def one_line(error: BaseException) -> str:
    """An error's message on one line (a robot's nack reason may hold a traceback's lines)."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


def reply_text(content: Any) -> str:
    """A reply's content as the text of a tool result: a string as it is, data as JSON."""
    return content if isinstance(content, str) else json.dumps(content, default=str)


class Crew:
    """The live robots on one bus, asked through one bus client.

    ``timeout``: seconds a call waits for a robot's reply (the broker waits no longer either).
    """

    def __init__(self, client: BusClient, timeout: float) -> None:
        self.client = client
        self.timeout = timeout

    def tools(self) -> tuple[list[RobotTool], list[str]]:
        """The live robots' tools now, and the names no tool can carry (``robot_tools``).

        Raises:
            PeerUnavailable: the broker did not answer.
            BusError: it refused ``ps`` (a key without the admin role).
        """
        return robot_tools(self.client.admin("ps"))

    def ask(self, tool: str, message: str) -> str:
        """Send ``message`` to the robot of ``tool`` (one instance of the name).

        Returns its reply.

        Raises:
            ToolNotFoundError: ``tool`` is not an ``ask_<name>`` tool.
            DeliveryFailed: no live robot of that name, or it refused the message (reason attached).
            ReplyTimeout: no reply within the time-out; the message says what became of it.
        """
        robot = tool[len(PREFIX):]
        if not tool.startswith(PREFIX) or not TOOL_NAME.fullmatch(robot):
            raise ToolNotFoundError(f"no tool {tool!r}: each tool is {PREFIX}<robot name>, one "
                                    "per live robot")
        return self.ask_robot(robot, message)

    def ask_robot(self, robot: str, message: str) -> str:
        """Send ``message`` to one instance of ``robot`` and return its reply.

        It raises the errors ``ask`` does, but the first.
        """
        reply = self.client.request(robot, message, timeout=self.timeout, any=True)
        return reply_text(reply.content)
