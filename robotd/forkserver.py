"""The fork server behind ``Robot.spawn``: a warm process that forks new robotds in milliseconds.

``robotlab.robot.spawn`` starts it on the first spawn in a process as
``python -m robotlab.robotd.forkserver --socket PATH --parent-pid PID --log-level L --log-format F``
(the spawning process's logging, which its children then log with). It imports what a child
needs to join the bus (``robotd/warmup.py: preload``, about 0.3 s), listens, forks its **warm
twin**, prints ``READY`` and serves fork requests on a unix socket, one JSON line each::

    -> {"daemon": {DaemonConfig fields}, "robot": {RobotSpec fields}}
    <- {"ok": true, "pid": 1234, "instance": "...", "warm": false}    once the child is on the bus
    <- {"ok": false, "pid": 1234, "error": "...", "exit_code": 78}

The twin warms up meanwhile (``robotd/warmup.py: warm``: litellm, hosted model calls,
``gc.freeze()``, several seconds, so its children share those pages), then takes over the same
listening socket: the first server stops accepting and prints ``WARM PID`` (``COLD`` if the
warm-up died), so a spawn never waits for the warm-up, and a child forked before it is done
loads the model client itself, on a thread, as a robotd started by hand does.

Each child runs in its own session and reports through a pipe when the broker has welcomed it.
The loop is single-threaded on purpose: forking a process with other threads can leave their
locks held forever in the child. The server exits when its parent does (a pidfd in the loop,
and ``PR_SET_PDEATHSIG`` when the parent started it from its main thread); the twin exits with
the first server (``PR_SET_PDEATHSIG``) or the parent, whichever goes first.
"""

from __future__ import annotations

import argparse
import logging
import os
import selectors
import signal
import socket
import sys
from typing import Any, NoReturn

from robotlab.ipc import json_lines
from robotlab.service import configure_logging

from .supervision import die_with_parent, open_pidfd, process_alive
from .warmup import preload, warm

log = logging.getLogger("robotlab.robotd")

POLL_SECONDS = 0.5
REQUEST_TIMEOUT = 5.0


class ForkServer:
    """The select loop: accept requests, fork children, answer once each child is ready."""

    def __init__(self, listener: socket.socket, parent_pid: int, warm: bool,
                 twin: tuple[int, int] | None = None) -> None:
        self.listener = listener
        self.parent_pid = parent_pid
        self.warm = warm
        """Whether this server's children inherit the warm-up (told to the spawner in each
        answer)."""
        self.selector = selectors.DefaultSelector()
        self.starting: set[int] = set()
        """Children whose readiness has not been read yet."""
        self.exit_codes: dict[int, int] = {}
        """Starting children that SIGCHLD reaped first: the spawner is still told their exit
        code."""
        self.selector.register(listener, selectors.EVENT_READ, ("accept",))
        self._signal_r, self._signal_w = os.pipe()
        os.set_blocking(self._signal_w, False)
        self.selector.register(self._signal_r, selectors.EVENT_READ, ("sigchld",))
        parent_fd = open_pidfd(parent_pid)
        if parent_fd is not None:
            self.selector.register(parent_fd, selectors.EVENT_READ, ("parent",))
        self.twin_pid, self.handed_over = (twin[0] if twin else None), False
        """The warm twin (its pid and the pipe it says ``warm`` on), and whether it serves now."""
        if twin is not None:
            self.selector.register(twin[1], selectors.EVENT_READ, ("twin",))
        self._running = True
        self._handlers = {"accept": self._accept, "request": self._request,
                          "child": self._child_ready, "sigchld": self._reap,
                          "parent": self._parent_gone, "twin": self._twin_warm}

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
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return  # the twin, on the same listening socket, took this connection first
        self.selector.register(conn, selectors.EVENT_READ, ("request",))

    def _twin_warm(self, key: Any) -> None:
        """The warm twin serves now (``warm PID``), or its warm-up died (end of file): say which, on
        stdout."""
        told = os.read(key.fd, 64).decode(errors="replace").split()
        self.selector.unregister(key.fd)
        os.close(key.fd)
        if told[:1] == ["warm"]:
            self.selector.unregister(self.listener)
            self.listener.close()
            self.handed_over = True
            _say(f"WARM {told[1]}")
        else:
            log.warning("fork server: the warm-up did not finish; spawned robots load the model "
                        "client themselves")
            _say("COLD")

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
            _answer(conn, {"ok": True, "pid": pid, "instance": data.partition(" ")[2],
                           "warm": self.warm})
            return
        code = self.exit_codes.pop(pid) if pid in self.exit_codes else _exit_code(pid)
        error = (data.partition(" ")[2] if data.startswith("error")
                 else f"the robot exited with code {code} before it was ready")
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
            if pid == self.twin_pid and self.handed_over:
                # Nobody accepts now: exit, so the spawner sees a dead server and starts another.
                log.warning("fork server: the warm server exited (%s); stopping",
                            os.waitstatus_to_exitcode(status))
                self._running = False

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
            _quiet_stdout()
            for key in list(self.selector.get_map().values()):
                os.close(key.fd)
                if key.data[0] == "child":
                    key.data[1].close()
            code = run_child(request, ready_fd)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            # one JSON object under --log-format json
            log.exception("fork server: the spawned robot crashed")
        finally:
            os._exit(code)


def run_child(request: dict[str, Any], ready_fd: int) -> int:
    """Run the robotd a fork request describes; a config error is reported through ``ready_fd``."""
    from robotlab.errors import PeerUnavailable, RobotlabError
    from robotlab.observability import setup, trace_settings, tracing

    from .hosting import from_fork_request, host

    # Logging is the server's, set up before it forked: the spawning process's format and level.
    try:
        config, spec = from_fork_request(request, ready_fd)
        # The warm server never traces (a provider's export thread would not survive the fork):
        # each child sets up its own, from the OTEL_* environment the spawning process gave it.
        setup(trace_settings(), f"robotd-{config.name}")
        try:
            return host(config, spec)
        finally:
            # the child leaves with os._exit, which skips the provider's flush at exit
            tracing.flush()
    except (RobotlabError, TypeError, KeyError) as exc:
        # An unreachable broker is a config error to systemd (78), but "not there" (69) to spawn.
        code = (PeerUnavailable.exit_code if isinstance(exc.__cause__, PeerUnavailable)
                else getattr(exc, "exit_code", 64))
        try:
            os.write(ready_fd, f"error {exc}\n".encode())
        except OSError:
            pass  # readiness was already reported; the exit code tells the rest
        return code


def _say(line: str) -> None:
    """One line to the spawning process (it reads READY, then WARM or COLD), then stdout goes
    quiet."""
    try:
        print(line, flush=True)
    except OSError:
        pass  # the spawner closed its end: nobody waits for the line
    _quiet_stdout()


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: children inherit it, and only the first server talks to the
    spawner."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


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
    # The spawning process's own (robotlab.service.logging_options): this server, its warm twin
    # and every child they fork log in its format at its level, to its stderr.
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--log-format", default="text")
    args = parser.parse_args(argv)
    if args.pdeathsig:
        die_with_parent(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    configure_logging(args.log_level, args.log_format)
    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(args.socket)
    listener.listen(64)
    # Both servers wait on this socket for a while: the one that loses a connection to the other
    # must not block in accept.
    listener.setblocking(False)
    twin_r, twin_w = os.pipe()
    first = os.getpid()
    twin = os.fork()
    if twin == 0:
        os.close(twin_r)
        serve_warm(listener, args.parent_pid, twin_w, first)
    os.close(twin_w)
    print("READY", flush=True)
    try:
        ForkServer(listener, args.parent_pid, warm=False, twin=(twin, twin_r)).serve_forever()
    finally:
        listener.close()
        if os.path.exists(args.socket):
            os.unlink(args.socket)
    return 0


def serve_warm(listener: socket.socket, parent_pid: int, twin_fd: int, first: int) -> NoReturn:
    """In the warm twin: warm up, tell the first server (``warm PID`` on ``twin_fd``), serve. Never
    returns.

    Forked by the first server before it serves, so it holds no request and no child of its own.
    """
    code = 0
    try:
        _quiet_stdout()
        # the first server is single-threaded: its main thread forked us
        die_with_parent(signal.SIGTERM)
        if os.getppid() != first:
            sys.exit(0)  # the first server died before the kernel took the request
        warm()
        os.write(twin_fd, f"warm {os.getpid()}\n".encode())
        os.close(twin_fd)
        ForkServer(listener, parent_pid, warm=True).serve_forever()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        log.exception("fork server: the warm server crashed")
        code = 70
    finally:
        os._exit(code)  # never the first server's clean-up: its socket file is its own to remove


if __name__ == "__main__":
    sys.exit(main())
