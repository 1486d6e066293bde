"""This process's fork server, from the spawning side: started on first use, asked to fork a child.

``python -m robotlab.robotd.forkserver`` is a process, not an import, so ``robotlab`` still imports
nothing from ``robotlab.robotd``. It says ``READY`` once it takes requests and ``WARM PID`` once
its children come from its warm twin; each fork request is one JSON line over its Unix socket
(``robotlab/ipc/json_lines.py``). ``robotlab/robot/spawn.py`` asks it for each child.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from robotlab.errors import PeerUnavailable
from robotlab.ipc import json_lines
from robotlab.service import logging_options

__all__ = ["FORK_SERVER_START_TIMEOUT", "ForkServerClient", "fork_server", "start_fork_server",
           "stop_fork_server", "use_fork_server"]

FORK_SERVER_START_TIMEOUT = 120.0
"""Seconds to wait for a new fork server: its ``READY`` takes about 0.4 s; its warm-up (``WARM``),
litellm's import included, 5-10 s, and much longer on a loaded machine."""


class ForkServerClient:
    """The spawning side of a fork server: its socket, and its process when we started it.

    The server says ``READY`` on its stdout once it takes requests (about 0.4 s after its start),
    then ``WARM PID`` once its children come from its warm twin (``robotd/forkserver.py``).
    """

    def __init__(self, path: str, process: subprocess.Popen | None = None,
                 folder: str | None = None) -> None:
        self.path = path
        self.process = process
        self.folder = folder
        self.ready = process is None
        """True once the server takes requests (a server this process did not start already
        does)."""
        self.warm_pid: int | None = None
        """The warm server's process, once it serves (``wait_warm``)."""
        self._lock = threading.Lock()

    @classmethod
    def launch(cls) -> ForkServerClient:
        """Start a fork server for this process without waiting for it (``wait_ready`` does)."""
        folder = tempfile.mkdtemp(prefix="rl-fork-")
        path = os.path.join(folder, "fork.sock")
        # its children log as this process does: format and level
        argv = [sys.executable, "-m", "robotlab.robotd.forkserver", "--socket", path,
                "--parent-pid", str(os.getpid()), *logging_options()]
        if threading.current_thread() is threading.main_thread():
            # the kernel ties it to this thread; see robotd/supervision.py
            argv.append("--pdeathsig")
        # Unbuffered: a line read ahead into a buffer would hide the next one from select.
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   bufsize=0)
        return cls(path, process, folder)

    @classmethod
    def start(cls, timeout: float = FORK_SERVER_START_TIMEOUT) -> ForkServerClient:
        """Start a fork server for this process and wait until it takes requests.

        Raises:
            PeerUnavailable: it did not report ready within ``timeout``.
        """
        server = cls.launch()
        server.wait_ready(timeout)
        return server

    def wait_ready(self, timeout: float = FORK_SERVER_START_TIMEOUT) -> None:
        """Wait until the server takes requests.

        Raises:
            PeerUnavailable: it did not report ready within ``timeout`` (it is stopped then).
        """
        with self._lock:
            if not self.ready:
                if self._next_word(("READY",), timeout) is None:
                    code = self.process.poll() if self.process else None
                    self.close()
                    raise PeerUnavailable(f"the fork server did not start within {timeout:g}s "
                                          f"(exit code {code})")
                self.ready = True

    def wait_warm(self, timeout: float = FORK_SERVER_START_TIMEOUT) -> bool:
        """Wait until children are forked warm (sharing the warm-up's memory).

        False if the warm-up died.

        A server this process did not start is taken as it is.

        Raises:
            PeerUnavailable: the server did not start, or did not say within ``timeout``.
        """
        self.wait_ready(timeout)
        with self._lock:
            if (self.warm_pid is None and self.process is not None
                    and self.process.stdout is not None):
                word = self._next_word(("WARM", "COLD"), timeout)
                if word is None:
                    raise PeerUnavailable(f"the fork server did not finish its warm-up within "
                                          f"{timeout:g}s")
                self.process.stdout.close()
                if word[0] == "WARM":
                    self.warm_pid = int(word[1])
            return self.warm_pid is not None or self.process is None

    def _next_word(self, words: tuple[str, ...], timeout: float) -> list[str] | None:
        """The server's next line that starts with one of ``words``, split.

        None at EOF or ``timeout``.

        Anything an import prints first is skipped.
        """
        assert self.process is not None and self.process.stdout is not None  # started by launch
        stdout, deadline = self.process.stdout, time.monotonic() + timeout
        while select.select([stdout], [], [], max(deadline - time.monotonic(), 0))[0]:
            line = stdout.readline()
            if not line:
                return None
            said = line.decode(errors="replace").split()
            if said[:1] and said[0] in words:
                return said
        return None

    def alive(self) -> bool:
        """True while the server can take requests."""
        if self.process is not None:
            return self.process.poll() is None
        return os.path.exists(self.path)

    def fork(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one fork request and wait for the answer (the child is on the bus when ok).

        Raises:
            PeerUnavailable: the server did not start, or no answer within ``timeout``.
        """
        self.wait_ready()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            try:
                conn.connect(self.path)
                json_lines.send(conn, request)
                return json_lines.LineReader(conn).next() or {}
            except EOFError as exc:
                raise PeerUnavailable("the fork server closed the connection without an "
                                      "answer") from exc
            except (OSError, ValueError) as exc:
                raise PeerUnavailable(f"the fork server did not answer within {timeout:g}s: "
                                      f"{exc}") from exc

    def close(self) -> None:
        """Stop the server if we started it.

        Children keep running: they are in their own sessions.
        """
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
            if self.process.stdout is not None:
                self.process.stdout.close()
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)


# One fork server per process: it is a property of the process (its parent pid is ours), so it
# lives at module level, created on first use under a lock and stopped at exit.
_server: ForkServerClient | None = None
_server_lock = threading.Lock()


def fork_server() -> ForkServerClient:
    """This process's fork server, started (or restarted) when needed.

    Its ``fork`` waits until it is ready.
    """
    global _server
    with _server_lock:
        if _server is None or not _server.alive():
            _server = ForkServerClient.launch()
            atexit.register(_server.close)
        return _server


def start_fork_server(warm: bool = False,
                      timeout: float = FORK_SERVER_START_TIMEOUT) -> ForkServerClient:
    """Start this process's fork server now, and return at once.

    A first ``spawn`` then finds it ready.

    With ``warm=True``, wait until children are forked from its warm twin (several seconds: litellm
    imported and a child's life run once), so each child shares that memory and needs no model
    client import of its own.

    Raises:
        PeerUnavailable: with ``warm=True``, the server did not start or warm up within ``timeout``.
    """
    server = fork_server()
    if warm:
        server.wait_warm(timeout)
    return server


def stop_fork_server() -> None:
    """Stop this process's fork server if it started one (spawned robots keep running)."""
    global _server
    with _server_lock:
        if _server is not None:
            _server.close()
        _server = None


def use_fork_server(path: str) -> None:
    """Spawn through an existing fork server (a spawned robot reuses its parent's)."""
    global _server
    with _server_lock:
        _server = ForkServerClient(path)
