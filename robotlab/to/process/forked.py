"""A forked child process the orchestrator supervises, and what ends it early.

The orchestrator (which has imported robotlab and litellm once) forks a child; the child makes
itself a process-group leader and serves the parent over a socket pair, one JSON object per
line. The parent waits for each reply while watching a ``Watch``: a stop request (a signal)
or the iteration's deadline kills the child's whole process group, and its descendants'
groups, and the wait ends with a failure report. The iteration's robot (``child.py``) and the
prose judge (``judge_child.py``) both run this way.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from robotlab.ipc import json_lines
from robotlab.observability import tracing
from robotlab.process_groups import Supervisor, kill_tree
from robotlab.to.process.failure import Failure, describe_error

# Sees each event the child sends; a dict it returns is the child's answer.
EventHook = Callable[[dict[str, Any]], dict[str, Any] | None]

POLL_SECONDS = 0.05

Serve = Callable[[socket.socket], None]
"""What the child runs: it reads commands from and writes replies to the socket."""


@dataclasses.dataclass
class Watch:
    """What ends a supervised child early: a stop request, or the iteration's deadline.

    ``deadline`` is a ``time.monotonic()`` value, set while an iteration runs (None: no limit).
    """

    stop: threading.Event = dataclasses.field(default_factory=threading.Event)
    deadline: float | None = None

    def ended(self) -> dict[str, Any] | None:
        """The failure to report when the wait must end now, else None."""
        if self.stop.is_set():
            return failure(Failure.interrupted())
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return failure(Failure.timed_out())
        return None


def failure(reason: Failure) -> dict[str, Any]:
    """A reply for work the orchestrator ended (timeout, signal, crash)."""
    return {"ok": False, "error": reason.to_wire()}


def send_line(sock: socket.socket, payload: dict[str, Any]) -> None:
    """Write one JSON object as one line (values JSON cannot hold become their ``str``)."""
    json_lines.send(sock, payload, default=str)


def _child_main(serve: Serve, sock: socket.socket) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setpgid(0, 0)
        serve(sock)
    except BaseException as exc:  # the child must never fall back into the parent's stack
        code = 1
        try:
            send_line(sock, failure(describe_error(exc)))
        except BaseException:
            pass
    finally:
        # the spans of the child's robot (a copy of the parent's provider) would be lost
        tracing.flush()
        os._exit(code)


class ForkedChild:
    """The parent's handle on one supervised child process."""

    def __init__(self, supervisor: Supervisor, watch: Watch) -> None:
        self.supervisor = supervisor
        self.watch = watch
        self.pid: int | None = None
        self._sock: socket.socket | None = None
        self._reader: json_lines.LineReader | None = None

    def start(self, serve: Serve) -> None:
        """Fork a child (its own process group) that runs ``serve``."""
        parent, child = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            parent.close()
            _child_main(serve, child)
        child.close()
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass  # the child already did it (or already exited)
        self.pid, self._sock, self._reader = pid, parent, json_lines.LineReader(parent)
        self.supervisor.add(pid)

    def request(self, payload: dict[str, Any],
                on_event: EventHook | None = None) -> dict[str, Any]:
        """Send ``payload`` and wait for the child's reply (or for the watch to end the wait).

        Lines with an ``event`` key that arrive first are progress, not the reply: each goes
        to ``on_event``, and what it returns (if anything) is sent back to the child as one line.
        """
        if self._sock is None or self.pid is None:
            return failure(Failure.child_exited("the child process is not running"))
        try:
            send_line(self._sock, payload)
        except OSError:
            pass  # the child already failed; its error report is waiting in the socket
        while True:
            reply = self.receive()
            if "event" not in reply:
                return reply
            answer = on_event(reply) if on_event is not None else None
            if answer is not None and self._sock is not None:
                send_line(self._sock, answer)

    def receive(self) -> dict[str, Any]:
        """The child's next reply; a failure reply when the watch ends the wait or the child
        dies."""
        if self._reader is None:
            return failure(Failure.child_exited("the child process is not running"))
        while True:
            ended = self.watch.ended()
            if ended is not None:
                self.kill()
                return ended
            try:
                reply = self._reader.next(timeout=POLL_SECONDS)
            except (EOFError, OSError):
                self.close()
                return failure(Failure.child_exited())
            if reply is not None:
                return reply

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
            self._sock = self._reader = None
        if self.pid is not None:
            _reap(self.pid)
            self.supervisor.discard(self.pid)
            self.pid = None


def _reap(pid: int) -> None:
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        time.sleep(0.01)
    kill_tree(pid, grace=0.5)
    os.waitpid(pid, 0)
