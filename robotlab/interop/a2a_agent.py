"""One live robot as an A2A agent: its agent card, and the executor that asks it over the bus.

The executor is the whole mapping from A2A to the bus: a message's text is sent to the robot
(``Crew.ask_robot``), the task goes ``submitted`` then ``working``, and the robot's reply is the
task's one artifact (``reply``) before ``completed``; a failure or a time-out is ``failed`` with
a one-line reason. A cancel stops the wait: the message already sent stays with the robot.
"""

from __future__ import annotations

from importlib.metadata import version

import anyio
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import TransportProtocol

from robotlab.errors import RobotlabError

from .crew import Crew, one_line

MEDIA = ["text/plain"]
"""What an agent reads and writes: a robot takes a message's text and replies in text (data as JSON)."""
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
                           description=f"Send the robot '{robot}' a message; its reply is the task's artifact.")],
    )


class RobotExecutor(AgentExecutor):
    """Ask one robot of ``crew`` for each message; its reply completes the task."""

    def __init__(self, crew: Crew, robot: str) -> None:
        self.crew = crew
        self.robot = robot

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Send the message's text to the robot and publish the task's states and its reply."""
        assert context.task_id is not None and context.context_id is not None  # the SDK sets both on a send
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None and context.message is not None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        await updater.start_work()
        try:
            # abandon_on_cancel: a cancel ends the wait now; the bus call ends at its own time-out
            reply = await anyio.to_thread.run_sync(self.crew.ask_robot, self.robot, context.get_user_input(),
                                                   abandon_on_cancel=True)
        except RobotlabError as exc:
            await updater.failed(updater.new_agent_message([new_text_part(f"{self.robot}: {one_line(exc)}")]))
            return
        await updater.add_artifact([new_text_part(reply)], name=REPLY)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Mark the task canceled; the SDK then cancels ``execute``, which stops waiting for the reply."""
        assert context.task_id is not None and context.context_id is not None  # a cancel names its task
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([new_text_part(
            f"{self.robot}: canceled; the message was already sent, and its reply, if one comes, is dropped")]))
