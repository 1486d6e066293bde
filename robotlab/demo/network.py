"""The network part of the offline demo: a small pipeline across robotd processes.

Two scripted robots run in their own ``robotd`` processes (``--handler
robotlab.demo.network:member``), side by side in one wave, each writing a note to the shared
memory; a local editor robot then waits for both notes and writes the summary. The demo
prints the memory changes as they arrive (with their writers) and the timing that shows the
two remote robots overlapped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from robotlab.environment import variable
from robotlab.errors import ConfigError
from robotlab.hooks.hooks import Hook, RunHookContext
from robotlab.robot.remote_tasks import TaskServer, is_network_task

from .stopping import stop

if TYPE_CHECKING:
    from robotlab.bus import BusClient, Message

__all__ = ["member", "run_demo"]

MEMBERS = {
    "researcher": "Three customers asked for yearly billing.",
    "reviewer": "The pricing page hides the yearly discount.",
}
STEP_SECONDS = 1.0
READY_TYPE = "demo.ready"


def _handed(name: str) -> str:
    """What the demo handed this member process in the variable ``name``."""
    value = variable(name)
    if value is None:
        raise ConfigError(f"{name} is not set: a demo member is started by robotlab.demo")
    return value


class _WritesNote(Hook):
    """Writes this robot's note to the network memory at the start of each run."""

    def before_run(self, ctx: RunHookContext) -> None:
        ctx.memory.set(f"notes:{ctx.robot.name}", _handed("ROBOT_LAB_DEMO_NOTE"))


class _ReadsNotes(Hook):
    """Waits until every remote robot has written its note."""

    def before_run(self, ctx: RunHookContext) -> None:
        ctx.memory.get(*(f"notes:{name}" for name in MEMBERS), wait=10)


@cache
def _server() -> TaskServer:
    from robotlab.robot.robot import Robot
    from robotlab.testing import ScriptedLLM

    name = _handed("ROBOT_LAB_DEMO_MEMBER")
    turns = [{"content": f"{name}: done", "delay": float(_handed("ROBOT_LAB_DEMO_STEP"))}] * 10
    robot = Robot(name=name, llm=ScriptedLLM(turns))
    robot.on(_WritesNote)
    return TaskServer(robot, _handed("ROBOT_LAB_DEMO_BROKER"))


def member(message: Message) -> Any:
    """The robotd handler of a demo member: build the robot when asked if ready, run the
    network's tasks."""
    if is_network_task(message):
        return _server().handle(message.content)
    if message.type == READY_TYPE:
        _server()
        return "ready"
    return None


def _start_member(name: str, broker_url: str, step: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ROBOT_LAB_DEMO_MEMBER": name, "ROBOT_LAB_DEMO_NOTE": MEMBERS[name],
           "ROBOT_LAB_DEMO_BROKER": broker_url, "ROBOT_LAB_DEMO_STEP": str(step)}
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", broker_url,
            "--handler", "robotlab.demo.network:member"]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_ready(client: BusClient, names: list[str], timeout: float = 20.0) -> None:
    """Wait until every member is on the bus and has built its robot."""
    deadline = time.monotonic() + timeout
    # other robots may be live too
    while not set(names) <= {row["name"] for row in client.admin("ps")}:
        if time.monotonic() > deadline:
            raise TimeoutError(f"demo members {names} did not join the bus in {timeout:g}s")
        threading.Event().wait(0.05)
    for name in names:
        client.request(name, "ready?", timeout=timeout, type=READY_TYPE)


def run_demo(broker_url: str, say: Callable[[str], Any] = print, step: float = STEP_SECONDS) -> Any:
    """Run the demo pipeline against the broker at ``broker_url``; returns the run's result.

    ``step`` is how long each remote robot's model takes to answer.
    """
    from robotlab import bus
    from robotlab.config.run_config import RunConfig
    from robotlab.network.network import create_network
    from robotlab.robot.robot import Robot
    from robotlab.testing import ScriptedLLM

    procs = [_start_member(name, broker_url, step) for name in MEMBERS]
    try:
        with bus.connect(broker_url, name="demo-network") as client:
            _wait_ready(client, list(MEMBERS))
            editor = Robot(name="editor", llm=ScriptedLLM(
                [{"content": "Summary: offer yearly billing up front."}]))
            editor.on(_ReadsNotes)
            with create_network(name="launch", config=RunConfig(bus=client)) as net:
                for name in MEMBERS:
                    net.task(name, name)
                net.task("summary", editor, depends_on=list(MEMBERS))
            net.memory.subscribe_pattern(
                "notes:*",
                lambda c: say(f"  memory: {c.key} = {json.dumps(c.value)} "
                              f"(written by {c.writer})"))
            started = time.monotonic()
            result = net.run("What should the launch note say?")
            elapsed = time.monotonic() - started
            net.memory.flush(2)
            net.close()
        say(f"  {len(MEMBERS)} remote robots of {step:g} s each ran side by side: "
            f"{elapsed:.2f} s in all (one after the other: over {len(MEMBERS) * step:g} s)")
        say(f"  final reply: {result.reply}")
        return result
    finally:
        stop(procs)
