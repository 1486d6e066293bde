"""Handlers that the process tests host in real robotds (``--handler handlers:NAME``)."""

from __future__ import annotations

import os
import subprocess
import threading
from typing import Any

from robotlab.bus import Message
from robotlab.tools import tool

# The robots spawn_child made: kept for this process's life, since a child stops when its
# parent robot's process exits, and a parent robot collected here would close its bus.
_PARENTS: list[Any] = []


def echo(message: Message) -> str:
    """Reply with the content and who answered."""
    return f"{message.content} (from {os.getpid()})"


def refuse(message: Message) -> None:
    """Always raise: the delivery is nacked with this message."""
    raise ValueError(f"refusing {message.content!r}")


def slow(message: Message) -> str:
    """Content "SECONDS[:MARKER]": touch MARKER (the test knows the handler started), wait,
    reply."""
    seconds, _, marker = str(message.content).partition(":")
    if marker:
        open(marker, "w").close()
    threading.Event().wait(float(seconds))
    return f"slept {seconds}"


def orphan(message: Message) -> str:
    """Leave an orphan behind: a shell that starts a short sleep in the background and exits."""
    subprocess.run(["sh", "-c", "sleep 0.1 &"], check=True)
    return "left one"


def hang(message: Message) -> None:
    """Never return (until the process is killed)."""
    threading.Event().wait()


def hang_if_told(message: Message) -> str:
    """Hang when this process was started with HANG=1; otherwise echo."""
    if os.environ.get("HANG") == "1":
        threading.Event().wait()
    return echo(message)


def unsendable(message: Message) -> object:
    """Return something that cannot cross a process boundary (a function)."""
    return unsendable


def judge_prefers_b(message: Message) -> str:
    """A prose judge (robot-to's --judge-robot) that always prefers version B."""
    return '{"verdict": "better", "reason": "B reads better"}'


def counted(message: Message) -> str:
    """Append "SENDER_INSTANCE ID" to the file $RUNS (each run of the handler is one line), work
    5 ms, echo."""
    with open(os.environ["RUNS"], "a") as runs:
        runs.write(f"{message.sender_instance} {message.id}\n")
    threading.Event().wait(0.005)
    return echo(message)


def counted_long(message: Message) -> str:
    """As :func:`counted`, working 40 ms: a pool of two takes seconds over 200 requests."""
    with open(os.environ["RUNS"], "a") as runs:
        runs.write(f"{message.sender_instance} {message.id}\n")
    threading.Event().wait(0.04)
    return echo(message)


def counted_slow(message: Message) -> str:
    """Content "SECONDS:LABEL": append LABEL to $RUNS as the run starts, work that long, echo
    LABEL."""
    seconds, _, label = str(message.content).partition(":")
    with open(os.environ["RUNS"], "a") as runs:
        runs.write(f"{label}\n")
    threading.Event().wait(float(seconds))
    return f"{label} (from {os.getpid()})"


def partition_client(url: str, go: str, out: str) -> None:
    """Ask bob for "slow" (4 s), then, once the file ``go`` exists, for five quick ones; write the
    replies (or the errors) to ``out`` as JSON lines. Run by the partition test on the broker's
    host."""
    import json

    from robotlab import bus

    with bus.connect(url, name="alice", timeout=10) as alice:
        trackers = [alice.send_request("bob", "4:slow")]
        while not os.path.exists(go):
            threading.Event().wait(0.05)
        trackers += [alice.send_request("bob", f"0:quick-{i}") for i in range(5)]
        with open(out, "w") as results:
            for tracker in trackers:
                try:
                    results.write(json.dumps({"reply": tracker.reply(90).content}) + "\n")
                except Exception as exc:
                    results.write(json.dumps({"error": str(exc)}) + "\n")


def spawn_child(message: Message) -> dict[str, Any]:
    """Content {"broker", "parent", "child", "api_base"}: a robot ``parent`` in this process spawns
    ``child`` (through the fork server) on a model at ``api_base``; reply the child's pid and
    instance."""
    from robotlab import Robot, bus

    asked = dict(message.content)
    # No keys given: the client finds this robotd's own key (a systemd credential at
    # $ROBOT_LAB_KEY) as every client does, and that key must list the parent's name.
    client = bus.connect(asked["broker"], name=asked["parent"])
    parent = Robot(name=asked["parent"], model="openai/scripted",
                   api_base=asked["api_base"]).with_bus(client)
    _PARENTS.append(parent)
    child = parent.spawn(name=asked["child"], system_prompt="You answer.", timeout=90)
    return {"pid": child.pid, "instance": child.instance}


@tool
def clock(city: str) -> str:
    """The time in a city (a template's front matter names it: ``tools: [handlers:clock]``).

    Args:
        city: where.
    """
    return f"12:00 in {city}"


def pool_client(url: str, go: str, out: str, count: str, seconds: str) -> None:
    """Once the file ``go`` exists, ask ``count`` requests of any one instance of ``w``, each
    working ``seconds``; write the replies (or the errors) to ``out`` as JSON lines. Run on the
    broker's host by the pool partition tests."""
    import json

    from robotlab import bus

    with bus.connect(url, name="alice", timeout=10) as alice:
        while not os.path.exists(go):
            threading.Event().wait(0.05)
        trackers = [alice.send_request("w", f"{seconds}:t{i}", any=True) for i in range(int(count))]
        with open(out, "w") as results:
            for tracker in trackers:
                try:
                    results.write(json.dumps({"reply": tracker.reply(150).content}) + "\n")
                except Exception as exc:
                    results.write(json.dumps({"error": str(exc)}) + "\n")
