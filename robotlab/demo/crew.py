"""The crew part of the offline demo: robots in their own processes, on the scripted stub model.

A serving robot (``concierge``) runs in its own ``robotd`` process; a client robot in this
process asks it over the bus; a lead robot spawns a ``specialist`` through the fork server,
which inherits the lead's model, and hands it a task. The model is the script server from
``robotlab.testing``: real HTTP through litellm, no network, no key. Every process the demo
starts is stopped before it returns.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .stopping import stop

if TYPE_CHECKING:
    from robotlab.bus import BusClient

__all__ = ["run_demo"]

SCRIPT = [
    {"content": "The quiet room on the second floor is free until noon."},
    {"content": "Book the quiet room from 10:00 to 11:30 and send the invite to the team."},
]
MODEL = "openai/scripted"


def _start_concierge(broker_url: str, api: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "concierge", "--broker", broker_url,
            "--system-prompt", "You know which rooms are free.", "--model", MODEL,
            "--api-base", api, "--serve"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_for(client: BusClient, name: str, proc: subprocess.Popen[bytes],
              timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not any(row["name"] == name for row in client.admin("ps")):
        if proc.poll() is not None:
            raise RuntimeError(f"robotd {name} exited with code {proc.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"robotd {name} did not join the bus in {timeout:g}s")
        threading.Event().wait(0.05)


def _show_crew(client: BusClient, say: Callable[[str], Any]) -> None:
    for row in client.admin("ps"):
        parent = f", spawned by {row['parent']}" if row.get("parent") else ""
        say(f"    {row['name']:<11} pid {row['pid']}{parent}")


def run_demo(broker_url: str, say: Callable[[str], Any] = print) -> None:
    """Show the crew on the broker at ``broker_url``."""
    from robotlab.robot.robot import Robot
    from robotlab.robot.spawn import start_fork_server, stop_fork_server
    from robotlab.testing import serve_script

    # The fork server warms up (imports litellm) while the concierge's robotd does the same; the
    # specialist is spawned once it is warm, so the demo shows a warm fork's milliseconds.
    warming = threading.Thread(target=start_fork_server, kwargs={"warm": True},
                               name="demo-fork-server", daemon=True)
    warming.start()
    with serve_script(SCRIPT) as api:
        concierge = _start_concierge(broker_url, api)
        lead = Robot(name="lead", bus=broker_url, model=MODEL, api_base=api)
        try:
            say("  starting robotd 'concierge' (serving, its own process; a cold start imports "
                "litellm)")
            _wait_for(lead.bus, "concierge", concierge)
            reply = lead.ask("concierge", "Which room is free this morning?", timeout=30)
            say(f"  lead asked concierge, reply: {reply.content}")
            status = lead.outbox[reply.in_reply_to or ""]["status"]
            say(f"  lead's outbox: {reply.in_reply_to} is {status}")
            warming.join()
            started = time.perf_counter()
            specialist = lead.spawn(name="specialist", system_prompt="You plan meetings.")
            took = (time.perf_counter() - started) * 1000
            info = specialist.info()
            say(f"  lead spawned 'specialist' (pid {specialist.pid}) in {took:.0f} ms; it "
                f"inherited model {info['model']}")
            result = lead.delegate(to=specialist, task="Plan the review meeting.")
            say(f"  specialist's plan: {result.reply}")
            say("  the crew on the bus:")
            _show_crew(lead.bus, say)
            specialist.stop()
        finally:
            lead.leave_bus()
            stop([concierge])
            stop_fork_server()
