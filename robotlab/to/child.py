"""An iteration's robot in its own child process, supervised by the orchestrator.

The orchestrator (which has imported robotlab and litellm once) forks a child; the child
makes itself a process-group leader, builds the iteration's robot and then serves
commands over a socket pair, one JSON object per line: ``{"cmd": "run", "message": ...}``
answered by an attempt report, ``{"cmd": "exit"}``. The same robot (same chat, same guard
state) serves the first run, the nudges and the repairs. On a timeout or a signal the
orchestrator kills the child's whole process group, and its descendants' groups.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import select
import signal
import socket
import threading
import time
from typing import Any

from robotlab.to.guards.chain import GuardChain, GuardSettings
from robotlab.to.guards.grader_lock import GraderLock
from robotlab.to.process_groups import Supervisor, kill_tree
from robotlab.to.robot_factory import ModelSettings, build_robot, run_robot
from robotlab.to.tools import submit, toolset

POLL_SECONDS = 0.05
_AUTH = re.compile(r"invalid api key|unauthorized|authentication failed", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class ChildPlan:
    """Everything the child needs to build its robot."""

    name: str
    system_prompt: str
    model: ModelSettings
    guard: GuardSettings
    lock_patterns: list[str]
    decisions: bool


@dataclasses.dataclass
class AttemptReport:
    """What one robot run in the child produced."""

    ok: bool
    input_tokens: int = 0
    output_tokens: int = 0
    result: dict[str, Any] | None = None
    decisions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    error: dict[str, Any] | None = None

    @classmethod
    def failed(cls, error_class: str, message: str, **extra: Any) -> AttemptReport:
        """A report for an attempt the orchestrator ended (timeout, signal, crash)."""
        return cls(ok=False, error={"class": error_class, "message": message, **extra})


def describe_error(exc: BaseException) -> dict[str, Any]:
    """An exception as plain data: class, message, auth flag, Retry-After seconds."""
    cause = exc.__cause__ or exc.__context__
    names = f"{type(exc).__name__} {type(cause).__name__ if cause else ''}"
    status = getattr(exc, "status", None) or getattr(exc, "status_code", None) or getattr(cause, "status_code", None)
    auth = "Unauthorized" in names or "Authentication" in names or status == 401 or bool(_AUTH.search(str(exc)))
    retry_after = getattr(exc, "retry_after", None) or getattr(cause, "retry_after", None)
    return {
        "class": type(exc).__name__,
        "message": str(exc),
        "auth": auth,
        "retry_after": float(retry_after) if isinstance(retry_after, int | float) else None,
    }


def _attempt(robot: Any, message: str, capture: submit.Capture) -> AttemptReport:
    try:
        result = run_robot(robot, message)
        report = AttemptReport(True, int(result.input_tokens or 0), int(result.output_tokens or 0))
    except Exception as exc:  # every failure crosses to the orchestrator as data
        report = AttemptReport(False, error=describe_error(exc))
    report.result = dataclasses.asdict(capture.result) if capture.result else None
    report.decisions, capture.decisions = capture.decisions, []
    return report


def _serve(plan: ChildPlan, sock: socket.socket) -> None:
    capture = submit.Capture()
    chain = GuardChain(plan.guard, GraderLock(plan.guard.root, plan.lock_patterns))
    specs = toolset(capture, chain, plan.decisions, plan.guard.local_guards, Supervisor())
    robot = build_robot(plan.name, plan.system_prompt, plan.model, specs, on_content=lambda _chunk: None)
    with sock.makefile("rb") as commands:
        for line in commands:
            command = json.loads(line)
            if command.get("cmd") != "run":
                return
            report = _attempt(robot, command["message"], capture)
            sock.sendall(json.dumps(dataclasses.asdict(report), default=str).encode() + b"\n")


def _child_main(plan: ChildPlan, sock: socket.socket) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setpgid(0, 0)
        _serve(plan, sock)
    except BaseException as exc:  # the child must never fall back into the parent's stack
        code = 1
        try:
            report = AttemptReport(False, error=describe_error(exc))
            sock.sendall(json.dumps(dataclasses.asdict(report), default=str).encode() + b"\n")
        except BaseException:
            pass
    finally:
        os._exit(code)


class RobotChild:
    """The parent's handle on one iteration's child process."""

    def __init__(self, plan: ChildPlan, supervisor: Supervisor, stop: threading.Event) -> None:
        self.plan = plan
        self.supervisor = supervisor
        self.stop = stop
        self.pid: int | None = None
        self._sock: socket.socket | None = None
        self._buffer = b""

    def start(self) -> None:
        """Fork the child (its own process group)."""
        parent, child = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            parent.close()
            _child_main(self.plan, child)
        child.close()
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass  # the child already did it (or already exited)
        self.pid, self._sock = pid, parent
        self.supervisor.add(pid)

    def run(self, message: str, deadline: float | None) -> AttemptReport:
        """Ask the robot to run ``message``; ends early on the deadline or a stop request."""
        if self._sock is None or self.pid is None:
            return AttemptReport.failed("ChildExited", "the robot process is not running")
        try:
            self._sock.sendall(json.dumps({"cmd": "run", "message": message}).encode() + b"\n")
        except OSError:
            pass  # the child already failed; its error report is waiting in the socket
        return self._receive(deadline)

    def _receive(self, deadline: float | None) -> AttemptReport:
        assert self._sock is not None
        while b"\n" not in self._buffer:
            if self.stop.is_set():
                self.kill()
                return AttemptReport.failed("Interrupted", "stopped by a signal")
            if deadline is not None and time.monotonic() >= deadline:
                self.kill()
                return AttemptReport.failed("IterationTimeout", "the iteration ran past --iteration-timeout")
            ready, _, _ = select.select([self._sock], [], [], POLL_SECONDS)
            if ready:
                chunk = self._sock.recv(65536)
                if not chunk:
                    self.close()
                    return AttemptReport.failed("ChildExited", "the robot process exited unexpectedly")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return AttemptReport(**json.loads(line))

    def kill(self) -> None:
        """Kill the child's process group and its descendants' groups, then reap it."""
        if self.pid is not None:
            kill_tree(self.pid)
        self.close()

    def close(self) -> None:
        """Tell the child to exit, reap it (killing it if it lingers) and forget it."""
        if self._sock is not None:
            try:
                self._sock.sendall(b'{"cmd": "exit"}\n')
            except OSError:
                pass
            self._sock.close()
            self._sock = None
        if self.pid is not None:
            self._reap(self.pid)
            self.supervisor.discard(self.pid)
            self.pid = None

    @staticmethod
    def _reap(pid: int) -> None:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
            time.sleep(0.01)
        kill_tree(pid, grace=0.5)
        os.waitpid(pid, 0)
