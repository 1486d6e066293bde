"""One live robot as an A2A agent: its agent card, and the executor that asks it over the bus.

The executor is the whole mapping from A2A to the bus: a message's text is sent to the robot
(``Asks.send``), the task goes ``submitted`` then ``working``, and the robot's reply is the
task's one artifact (``reply``) before ``completed``; a failure or a time-out is ``failed`` with
a one-line reason. A robot that asks the server a question first puts the task in
``input_required`` (``a2a_asks.py``), and the client's next message on it is the answer. A
cancel stops the wait: the message already sent stays with the robot.
"""

from __future__ import annotations

from importlib.metadata import version

import anyio
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
from a2a.utils.constants import TransportProtocol

from robotlab.errors import RobotlabError

from .a2a_asks import Asks, question_text
from .crew import one_line

MEDIA = ["text/plain"]
"""What an agent reads and writes: a robot takes a message's text and replies in text (data as
JSON)."""
REPLY = "reply"
"""The name of the artifact that carries a robot's reply."""


def agent_card(robot: str, instances: int, url: str) -> AgentCard:
    """The card of ``robot``, whose JSON-RPC endpoint is ``url``: one skill, asking it."""
    many = f" One of its {instances} instances answers." if instances > 1 else ""
    return AgentCard(
        name=robot,
        description=f"The robot '{robot}' of a robotlab crew, live on its bus.{many}",
        version=version("robotlab"),
        supported_interfaces=[AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC,
                                             protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=MEDIA, default_output_modes=MEDIA,
        skills=[AgentSkill(id="ask", name=f"ask {robot}", tags=["robotlab"],
                           description=f"Send the robot '{robot}' a message; its reply is the "
                                       "task's artifact.")],
    )


class RobotExecutor(AgentExecutor):
    """Ask one robot for each message; its reply completes the task, its question pauses it."""

    def __init__(self, asks: Asks, robot: str) -> None:
        self.asks = asks
        self.robot = robot

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Send the message's text to the robot (or answer its question with it) and publish the
        task's states: its reply, its next question, or why it failed."""
        # the SDK sets both on a send
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        task, text = context.current_task, context.get_user_input()
        wait = self.asks.waiting(context.task_id)
        try:
            if (wait is not None and task is not None
                    and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED):
                self.asks.answer(wait, text)
            else:
                if task is None and context.message is not None:
                    await event_queue.enqueue_event(new_task_from_user_message(context.message))
                wait = self.asks.send(context.task_id, self.robot, text)
            await updater.start_work()
            # abandon_on_cancel: a cancel ends the wait now; the bus call ends at its own time-out
            outcome = await anyio.to_thread.run_sync(wait.next, abandon_on_cancel=True)
        except RobotlabError as exc:
            self.asks.drop(context.task_id)
            await updater.failed(updater.new_agent_message(
                [new_text_part(f"{self.robot}: {one_line(exc)}")]))
            return
        if not isinstance(outcome, str):
            await updater.requires_input(updater.new_agent_message(
                [new_text_part(question_text(outcome))]))
            return
        self.asks.drop(context.task_id)
        await updater.add_artifact([new_text_part(outcome)], name=REPLY)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Mark the task canceled; the SDK then cancels ``execute``, which stops waiting for the
        reply."""
        # a cancel names its task
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        self.asks.drop(context.task_id)
        await updater.cancel(updater.new_agent_message([new_text_part(
            f"{self.robot}: canceled; the message was already sent, and its reply, if one comes, "
            "is dropped")]))
