"""A robot that asks its A2A caller a question: the task goes ``input_required`` with the question,
and the caller's next message on the task is the answer (``robotlab a2a-serve`` as a real process,
called with the ``a2a-sdk``'s own client).

The robot is a member of the bus of role robot whose handler asks whoever sent it the message
with ``ask_human``, as a robot asks a person."""

from __future__ import annotations

import anyio
import httpx
import pytest
from a2a.client import create_client
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

from robotlab import bus
from robotlab.robot.human import ask_human
from tests.process.conftest import stop
from tests.process.test_a2a_serve_processes import SECONDS, a2a_http, config, request  # noqa: F401

pytestmark = pytest.mark.process


def asks_the_city(client: bus.BusClient) -> None:
    """Make ``client`` a robot that asks its sender for a city, then tells the time there."""

    def handle(message: bus.Message) -> str:
        city = ask_human(client, message.sender, "Which city?", timeout=SECONDS).result(SECONDS)
        return f"It is 12:00 in {city} ({message.content})."

    client.on_message(handle)


def follow_up(task_id: str, context_id: str, text: str) -> SendMessageRequest:
    return SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=f"m-{text}",
                                              task_id=task_id, context_id=context_id,
                                              parts=[Part(text=text)]))


def test_a_robots_question_is_input_required_and_the_next_message_answers_it(
        broker: str, a2a_http) -> None:  # noqa: F811
    robots, server = a2a_http()

    async def scenario() -> None:
        async with httpx.AsyncClient(timeout=SECONDS) as http:
            client = await create_client(f"{robots}/clock/", config(False, http))
            async with client:
                with anyio.fail_after(SECONDS):
                    [asked] = [r async for r in client.send_message(request("what time is it?"))]
                    task = asked.task
                    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
                    assert get_message_text(task.status.message) == "Which city?"
                    answered = [r async for r in client.send_message(
                        follow_up(task.id, task.context_id, "Oslo"))]
        [done] = answered
        assert (done.task.id, done.task.status.state) == (task.id, TaskState.TASK_STATE_COMPLETED)
        assert [get_artifact_text(a) for a in done.task.artifacts] == [
            "It is 12:00 in Oslo (what time is it?)."]

    with bus.connect(broker, name="clock", role="robot", timeout=5) as clock:
        asks_the_city(clock)
        anyio.run(scenario)
    assert stop(server) == 0, server.output()
    assert "Traceback" not in server.output()
