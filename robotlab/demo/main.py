"""The offline demo behind ``make demo``: real processes on a real bus, no network, no paid model.

``python -m robotlab.demo`` starts a broker process and two robotds hosting
:mod:`robotlab.demo.handlers`, routes messages between them (send, request/reply, fan-out to
two instances of one name, a dead letter), then runs the network demo, the crew demo (when
this checkout has it) and the robot-to demo. Each part is guarded: a missing part is skipped
with one line, a failing part is reported and the others still run (the exit code is then 1).
Every process the demo starts is stopped before it exits.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from .stopping import stop

if TYPE_CHECKING:
    from robotlab.bus import BusClient

CLERK_HANDLER = "robotlab.demo.handlers:clerk"
# A deadline, not a wait: a robotd joins in about 3 s, in over 10 s on a loaded machine.
START_TIMEOUT = 60.0


@dataclass
class Processes:
    """The processes the demo started, each logging to a file; all stopped by :meth:`stop_all`."""

    folder: Path
    started: list[tuple[str, subprocess.Popen[bytes], Path]] = field(default_factory=list)

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        """Start ``argv`` with its output in ``<folder>/<name>.log``."""
        log = self.folder / f"{name}-{len(self.started)}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
        self.started.append((name, proc, log))
        return proc

    def log_of(self, proc: subprocess.Popen[bytes]) -> str:
        """The output ``proc`` wrote so far."""
        return next(log.read_text(errors="replace") for _, p, log in self.started if p is proc)

    def stop_all(self) -> None:
        """SIGTERM everything, then SIGKILL what has not exited after the grace period."""
        stop(proc for _, proc, _ in self.started)


class Demo:
    """Runs the parts in order and remembers which failed."""

    def __init__(self, console: Console, folder: Path) -> None:
        self.console = console
        self.folder = folder
        self.procs = Processes(folder)
        self.url = f"ipc://{folder}/broker.sock"
        self.failed: list[str] = []

    def say(self, text: str) -> None:
        """Print one plain line (no markup is read from ``text``)."""
        self.console.print(escape(text))

    def part(self, title: str, run: Callable[[], Any], shows: str = "") -> bool:
        """Run one part under a heading (and a line on what it shows); report, not raise, what it
        raised. True when it ran."""
        self.console.print(f"\n[bold cyan]== {title}[/]")
        if shows:
            self.console.print(f"  [dim]{escape(shows)}[/]")
        try:
            run()
            return True
        except Exception as exc:  # the demo's one boundary: report the part and go on
            self.failed.append(title)
            self.console.print(f"  [bold red]failed:[/] {escape(type(exc).__name__)}: "
                               f"{escape(str(exc))}")
            return False


# -- the bus parts -------------------------------------------------------------------------


def start_broker(demo: Demo) -> None:
    """Start ``robotlab broker`` on an ipc:// endpoint and wait until it listens."""
    # Its journal lives and dies with the demo's folder: nothing is left in the user's state folder.
    argv = [sys.executable, "-m", "robotlab.cli", "broker", "--bind", demo.url,
            "--ack-timeout", "5", "--journal", str(demo.folder / "broker.db")]
    proc = demo.procs.start("broker", argv)
    _wait(lambda: "listening on" in demo.procs.log_of(proc), proc, demo, "the broker to listen")
    demo.say(f"  robotlab broker pid {proc.pid} listening on {demo.url}")


def start_clerks(demo: Demo, client: BusClient) -> None:
    """Start two robotds under the one name ``clerk`` and wait until both are on the bus."""
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "clerk", "--broker", demo.url,
            "--handler", CLERK_HANDLER]
    procs = [demo.procs.start("robotd-clerk", argv) for _ in range(2)]
    for proc in procs:
        _wait(functools.partial(_listed, client, proc.pid), proc, demo, f"robotd pid {proc.pid}")
    for row in client.admin("ps"):
        demo.say(f"  robotd --name {row['name']} --handler {CLERK_HANDLER}: pid {row['pid']}, "
                 f"instance {row['instance']}, {row['state']}")


def route_messages(client: BusClient, say: Callable[[str], None],
                   replies: queue.Queue[Any]) -> None:
    """A send (fanned out and acked by both), a request to any one, a request to both."""
    tracker = client.send("clerk", "order 12 staplers").wait(5)
    say(f"  send     demo -> clerk 'order 12 staplers': delivered and acked by "
        f"{len(tracker.instances)} instances (fan-out)")
    reply = client.request("clerk", "what is on file?", timeout=5, any=True)
    say(f"  request  demo -> one clerk (any): {reply.content}")
    roll_call = client.send("clerk", "roll call", type="request")
    answers: list[str] = []
    while len(answers) < 2:
        message = replies.get(timeout=5)
        if message.reply_to == roll_call.id:  # a late reply to an earlier request is not this one's
            answers.append(str(message.content))
    answers.sort()
    say("  request  demo -> every clerk (fan-out): 2 replies")
    for answer in answers:
        say(f"             {answer}")


def dead_letter(client: BusClient, say: Callable[[str], None]) -> None:
    """Send to a robot nobody runs: the sender is told, and the message waits in the DLQ."""
    from robotlab.errors import Undeliverable

    try:
        client.send("nobody", "a lost letter").wait(5)
        raise RuntimeError("the broker delivered a message to a robot that does not exist")
    except Undeliverable as exc:
        say(f"  send     demo -> nobody: {exc.reason} ({exc.detail}); dead letter {exc.dlq_id}")
    from robotlab.bus.wire.protocol import unpack

    for row in client.admin("dlq.list"):
        say(f"  dlq list: {row['dlq_id']}  {row['reason']}  to {row['to']}  from {row['from']}  "
            f"{unpack(row['body'])!r}")


def _listed(client: BusClient, pid: int) -> bool:
    return any(row["pid"] == pid for row in client.admin("ps"))


def _wait(ready: Callable[[], Any], proc: subprocess.Popen[bytes], demo: Demo, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: the process exited {proc.returncode}:\n"
                               f"{demo.procs.log_of(proc)[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {START_TIMEOUT:g}s for {what}")
        time.sleep(0.05)


# -- the other demos -----------------------------------------------------------------------


def run_optional(module_name: str, demo: Demo, *args: Any) -> None:
    """Call ``module_name.run_demo(*args)``, or say it is not in this checkout yet."""
    if importlib.util.find_spec(module_name) is None:
        demo.say(f"  skipped: {module_name} is not in this checkout yet")
        return
    importlib.import_module(module_name).run_demo(*args)


def run_robot_to(demo: Demo) -> None:
    """The robot-to demo in a scratch git repository; its exit code must be 0."""
    from robotlab.demo.robot_to import run_demo

    code = run_demo(demo.folder / "robot-to")
    if code != 0:
        raise RuntimeError(f"robot-to exited {code}")


# -- the whole demo ------------------------------------------------------------------------

NEXT_STEPS = """
Next: the same crew with a real model (any litellm model; set its API key, or run Ollama):
  .venv/bin/robotlab broker &
  .venv/bin/robotd --name bob --system-prompt "You are a terse clerk." --model gpt-4o-mini --serve &
  .venv/bin/robotlab send --to bob --wait "What can you do?"
  .venv/bin/robotlab ps
On systemd hosts: deploy/README.md (a two-host crew with keys); the docs: make docs."""


def run_bus_parts(demo: Demo) -> None:
    """Broker, robotds, messages, dead letters, then the demos that need the broker."""
    from robotlab import bus

    if not demo.part("a broker process", lambda: start_broker(demo),
                     "the router every robot connects to, as its own OS process"):
        demo.say("  skipping everything that needs the broker")
        return
    replies: queue.Queue[Any] = queue.Queue()
    with bus.connect(demo.url, name="demo") as client:
        client.on_message(lambda message: replies.put(message) if message.is_reply else None)
        if demo.part("two robotds, one name", lambda: start_clerks(demo, client),
                     "two processes answer to the name clerk: the bus treats them as one robot"):
            demo.part("routing", lambda: route_messages(client, demo.say, replies),
                      "a message goes to every clerk, or to any one of them; replies find their "
                      "way back")
        demo.part("dead letters", lambda: dead_letter(client, demo.say),
                  "a message nobody can take is kept, with the reason, and its sender is told")
    demo.part("a network across robotds",
              lambda: run_optional("robotlab.demo.network", demo, demo.url, demo.say),
              "robots in different processes work one pipeline over a shared memory")
    demo.part("a crew", lambda: run_optional("robotlab.demo.crew", demo, demo.url),
              "robots built from templates, each in its own robotd, answering with a scripted "
              "model")


def main() -> int:
    """Run the demo; 0 when every part that exists ran."""
    console = Console(soft_wrap=True, highlight=False)
    console.print("[bold]robotlab demo[/]: real processes on one bus, scripted models, no network")
    started = time.monotonic()
    # a short name: ipc:// paths must stay under ~100 bytes
    folder = Path(tempfile.mkdtemp(prefix="rl-demo-"))
    demo = Demo(console, folder)
    try:
        run_bus_parts(demo)
    finally:
        demo.procs.stop_all()
    try:
        demo.part("robot-to", lambda: run_robot_to(demo))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    elapsed = time.monotonic() - started
    if demo.failed:
        console.print(f"\n[bold red]demo finished in {elapsed:.1f} s; failed: "
                      f"{escape(', '.join(demo.failed))}[/]")
        return 1
    console.print(f"\n[bold green]demo finished in {elapsed:.1f} s[/]; every process it started "
                  "is stopped")
    console.print(escape(NEXT_STEPS))
    return 0


