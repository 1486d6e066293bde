"""The fork server behind ``Robot.spawn``: a warm process that forks new robotds in milliseconds.

``robotlab.robot.spawn`` starts it on the first spawn in a process as
``python -m robotlab.robotd.forkserver --socket PATH --parent-pid PID``. It warms up once
(``robotd/warmup.py``: imports, one model call, ``gc.freeze()``, so children share those pages),
prints ``READY`` and then serves fork requests on a unix socket, one JSON line each::

    -> {"daemon": {DaemonConfig fields}, "robot": {RobotSpec fields}}
    <- {"ok": true, "pid": 1234, "instance": "..."}    once the child is on the bus
    <- {"ok": false, "pid": 1234, "error": "...", "exit_code": 78}

Each child runs in its own session and reports through a pipe when the broker has welcomed it.
The loop is single-threaded on purpose: forking a process with other threads can leave their
locks held forever in the child. The server exits when its parent does (a pidfd in the loop,
and ``PR_SET_PDEATHSIG`` when the parent started it from its main thread).
"""

from __future__ import annotations

import argparse
import logging
import os
import selectors
import signal
import socket
import sys
import traceback
from typing import Any

from robotlab.ipc import json_lines

from .supervision import die_with_parent, open_pidfd, process_alive
from .warmup import warm

log = logging.getLogger("robotlab.robotd")

POLL_SECONDS = 0.5
REQUEST_TIMEOUT = 5.0


class ForkServer:
    """The select loop: accept requests, fork children, answer once each child is ready."""

    def __init__(self, listener: socket.socket, parent_pid: int) -> None:
        self.listener = listener
        self.parent_pid = parent_pid
        self.selector = selectors.DefaultSelector()
        self.starting: set[int] = set()
        """Children whose readiness has not been read yet."""
        self.exit_codes: dict[int, int] = {}
        """Starting children that SIGCHLD reaped first: the spawner is still told their exit code."""
        self.selector.register(listener, selectors.EVENT_READ, ("accept",))
        self._signal_r, self._signal_w = os.pipe()
        os.set_blocking(self._signal_w, False)
        self.selector.register(self._signal_r, selectors.EVENT_READ, ("sigchld",))
        parent_fd = open_pidfd(parent_pid)
        if parent_fd is not None:
            self.selector.register(parent_fd, selectors.EVENT_READ, ("parent",))
        self._running = True
        self._handlers = {"accept": self._accept, "request": self._request, "child": self._child_ready,
                          "sigchld": self._reap, "parent": self._parent_gone}

    def serve_forever(self) -> None:
        """Serve until the parent process is gone."""
        signal.set_wakeup_fd(self._signal_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        while self._running:
            for key, _ in self.selector.select(POLL_SECONDS):
                self._handlers[key.data[0]](key)
            if os.getppid() != self.parent_pid and not process_alive(self.parent_pid):
                self._running = False

    def _accept(self, key: Any) -> None:
        conn, _ = self.listener.accept()
        self.selector.register(conn, selectors.EVENT_READ, ("request",))

    def _request(self, key: Any) -> None:
        conn = key.fileobj
        self.selector.unregister(conn)
        try:
            conn.settimeout(REQUEST_TIMEOUT)
            request = json_lines.LineReader(conn).next()
            if request is None:
                raise EOFError("the connection closed before a request")
        except (OSError, ValueError, EOFError) as exc:
            _answer(conn, {"ok": False, "error": f"bad fork request: {exc}", "exit_code": 64})
            return
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            self._become_child(request, ready_w, conn)
        os.close(ready_w)
        self.selector.register(ready_r, selectors.EVENT_READ, ("child", conn, pid))
        self.starting.add(pid)

    def _child_ready(self, key: Any) -> None:
        _, conn, pid = key.data
        ready_r = key.fileobj
        self.selector.unregister(ready_r)
        data = os.read(ready_r, 65536).decode(errors="replace").strip()
        os.close(ready_r)
        self.starting.discard(pid)
        if data.startswith("ready"):
            _answer(conn, {"ok": True, "pid": pid, "instance": data.partition(" ")[2]})
            return
        code = self.exit_codes.pop(pid) if pid in self.exit_codes else _exit_code(pid)
        error = data.partition(" ")[2] if data.startswith("error") else f"the robot exited with code {code} before it was ready"
        _answer(conn, {"ok": False, "pid": pid, "error": error, "exit_code": code})

    def _reap(self, key: Any) -> None:
        os.read(self._signal_r, 4096)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.starting:
                self.exit_codes[pid] = os.waitstatus_to_exitcode(status)

    def _parent_gone(self, key: Any) -> None:
        self._running = False

    def _become_child(self, request: dict[str, Any], ready_fd: int, conn: socket.socket) -> None:
        """In the forked child: leave the server behind and run the robotd. Never returns."""
        code = 70
        try:
            os.setsid()
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, signal.SIG_DFL)
            conn.close()
            for key in list(self.selector.get_map().values()):
                os.close(key.fd)
                if key.data[0] == "child":
                    key.data[1].close()
            code = run_child(request, ready_fd)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)


def run_child(request: dict[str, Any], ready_fd: int) -> int:
    """Run the robotd a fork request describes; a config error is reported through ``ready_fd``."""
    from robotlab.errors import PeerUnavailable, RobotlabError
    from robotlab.observability import setup, trace_settings, tracing

    from .hosting import child_logging, from_fork_request, host

    child_logging()  # already done by the warm-up, as all of this: a no-op here
    try:
        config, spec = from_fork_request(request, ready_fd)
        # The warm server never traces (a provider's export thread would not survive the fork):
        # each child sets up its own, from the OTEL_* environment the spawning process gave it.
        setup(trace_settings(), f"robotd-{config.name}")
        try:
            return host(config, spec)
        finally:
            tracing.flush()  # the child leaves with os._exit, which skips the provider's flush at exit
    except (RobotlabError, TypeError, KeyError) as exc:
        # An unreachable broker is a config error to systemd (78), but "not there" (69) to spawn.
        code = PeerUnavailable.exit_code if isinstance(exc.__cause__, PeerUnavailable) else getattr(exc, "exit_code", 64)
        try:
            os.write(ready_fd, f"error {exc}\n".encode())
        except OSError:
            pass  # readiness was already reported; the exit code tells the rest
        return code


def _answer(conn: socket.socket, answer: dict[str, Any]) -> None:
    try:
        json_lines.send(conn, answer)
    except OSError:
        pass  # the requester gave up waiting; its timeout already told the caller
    finally:
        conn.close()


def _exit_code(pid: int) -> int | None:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None  # already reaped by the SIGCHLD handler
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str] | None = None) -> int:
    """Warm up, listen, print READY, serve until the parent is gone."""
    parser = argparse.ArgumentParser(prog="robotlab.robotd.forkserver")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--pdeathsig", action="store_true")
    args = parser.parse_args(argv)
    if args.pdeathsig:
        die_with_parent(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    warm()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(args.socket)
    listener.listen(64)
    print("READY", flush=True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # children inherit stdout: keep them quiet
    try:
        ForkServer(listener, args.parent_pid).serve_forever()
    finally:
        listener.close()
        if os.path.exists(args.socket):
            os.unlink(args.socket)
    return 0


if __name__ == "__main__":
    sys.exit(main())
