"""A member reached by name over the bus (embedded broker, no process started).

The member is a real robot behind a TaskServer on its own bus connection: the same path a
robotd member takes, minus the process boundary (tests/process covers that).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from robotlab import Robot, RunConfig, bus, create_network, tool
from robotlab.hooks.hooks import Hook
from robotlab.robot.remote_tasks import TaskServer, is_network_task
from robotlab.testing import ScriptedLLM


@tool
def lookup(order: str) -> str:
    """Look an order up.

    Args:
        order: the order id.
    """
    return f"order {order}: shipped"


class NotesAsItself(Hook):
    def before_run(self, ctx: Any) -> None:
        ctx.memory.set("note", f"from {ctx.robot.name}")


@pytest.fixture
def owner() -> Iterator[Any]:
    with bus.connect(None, name="owner") as client:
        yield client


def serve(owner: Any, robot: Robot) -> Any:
    """Put ``robot`` on the bus under its name, answering network tasks."""
    client = bus.connect(owner.url, name=robot.name)
    server = TaskServer(robot, owner.url)
    client.on_message(lambda message: server.handle(message.content) if is_network_task(message)
                      else None)
    return client, server


def test_a_member_named_on_the_bus_gets_the_config_tools_and_memory(owner: Any) -> None:
    far = Robot(name="far", llm=ScriptedLLM([{"content": "far reply"}]), local_tools=[lookup],
                tools="inherit")
    far.on(NotesAsItself)
    client, server = serve(owner, far)
    config = RunConfig(bus=owner, model="net-model", temperature=0.2, tools=["lookup"])
    net = create_network(name="wire", config=config)
    net.task("t", "far", tools="inherit", context={"tone": "dry"}, memory={"brief": "short"})
    changes: list[Any] = []
    net.memory.subscribe("brief", callback=changes.append)
    try:
        result = net.run("hello")
        request = far.llm.requests[0]
        assert request.last_user == "hello"
        assert "net-model" in request.params["model"] and request.params["temperature"] == 0.2
        assert request.tool_names == ["lookup"]
        assert result.reply == "far reply" and result.context["far"].robot_name == "far"
        assert net.memory.get("note") == "from far"
        assert net.memory_service_name == "memory/wire"
        net.memory.flush(2)
        assert [(c.value, c.writer) for c in changes] == [("short", "far")]
    finally:
        server.close()
        client.close()
        net.close()


def test_a_remote_error_reads_as_if_raised_here(owner: Any) -> None:
    broken = Robot(name="broken",
                   llm=ScriptedLLM([{"error": {"status": 503, "message": "overloaded"}}]))
    client, server = serve(owner, broken)
    net = create_network(name="err", config=RunConfig(bus=owner)).task("t", "broken")
    try:
        result = net.run("x")
        assert result.reply.startswith("Error: InferenceError: ")
        assert "overloaded" in result.reply
        assert result.errors["t"][0].startswith("InferenceError: ")
    finally:
        server.close()
        client.close()
        net.close()
