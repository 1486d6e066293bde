"""The fork server behind ``Robot.spawn``: a warm process that forks new robotds in milliseconds.

``robotlab.robot.spawn`` starts it on the first spawn in a process as
``python -m robotlab.robotd.forkserver --socket PATH --parent-pid PID``. It imports robotlab,
litellm and the daemon once, calls ``gc.freeze()`` (so children share those pages instead of
copying them at their first collection), prints ``READY`` and then serves fork requests on a
unix socket, one JSON line each::

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
import contextlib
import gc
import importlib
import inspect
import logging
import os
import queue
import selectors
import signal
import socket
import sys
import threading
import traceback
from typing import Any

from robotlab.ipc import json_lines

from .supervision import die_with_parent, open_pidfd, process_alive

log = logging.getLogger("robotlab.robotd")

POLL_SECONDS = 0.5
REQUEST_TIMEOUT = 5.0


# What litellm loads on a process's first completion (about 2.5 s, mostly pydantic building
# response schemas): paid once here instead of in every child. Best effort: names that a
# litellm version lacks are skipped.
WARM_MODULES = (
    "httpcore", "h11", "h2.connection", "robotlab.config.settings", "litellm.proxy._types", "litellm._service_logger",
    "litellm.integrations.generic_api.generic_api_callback", "litellm.integrations.prometheus_services",
    "litellm.litellm_core_utils.logging_callback_manager", "litellm.llms.github_copilot.authenticator",
    "litellm.llms.github_copilot.per_user_auth", "litellm.llms.litellm_proxy.chat.transformation",
    "litellm.llms.openai.chat.gpt_audio_transformation", "litellm.llms.openai_like.dynamic_config",
    "litellm.proxy.openai_files_endpoints.common_utils", "litellm.proxy.spend_tracking.savings",
)
WARM_MODELS = (
    "litellm.proxy._types:CallbackOnUI", "litellm.types.router:GenericLiteLLMParams",
    "litellm.types.router:LiteLLM_Params", "litellm.types.services:ServiceLoggerPayload",
    "litellm.types.utils:Message", "litellm.types.utils:Choices", "litellm.types.utils:ModelResponse",
    "litellm.types.utils:Usage", "litellm.types.utils:PromptTokensDetailsWrapper",
    "litellm.types.utils:ModelResponseStream", "litellm.types.utils:StreamingChoices", "litellm.types.utils:Delta",
    "openai.types.chat.chat_completion_message:ChatCompletionMessage",
    "openai.types.chat.chat_completion:Choice", "openai.types.chat.chat_completion:ChatCompletion",
)


def warm() -> None:
    """Import everything a robotd needs, make one model call, then freeze the heap.

    A fork keeps only the forking thread, so no thread may outlive the warm-up: the model call
    (:func:`warm_model_call`) ends every thread it started before ``gc.freeze()``.
    """
    from robotlab.config.cascade import prepare_litellm_environment

    prepare_litellm_environment()
    import litellm  # the point is the import: 3-4 s paid once, not per child

    import robotlab.network.member  # noqa: F401
    import robotlab.robot.robot  # noqa: F401
    import robotlab.robot.spawn  # noqa: F401
    from robotlab import bus  # noqa: F401

    from . import hosting  # noqa: F401

    for name in WARM_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for path in WARM_MODELS:
        module, _, attr = path.partition(":")
        with contextlib.suppress(Exception):
            getattr(importlib.import_module(module), attr).model_rebuild()
    with contextlib.suppress(Exception):
        # Built lazily by the first price lookup, by walking the whole price table: each child
        # doing it itself would also un-share every key it touches.
        litellm.utils._rebuild_model_cost_lowercase_map()
    try:
        warm_model_call()
    except Exception as exc:  # best effort: a child then pays the first call's cost itself
        log.warning("fork server: warm-up model call skipped: %s", exc)
    gc.collect()
    gc.freeze()


def warm_model_call() -> None:
    """One robot run against an in-process stub model, then every thread it started ended.

    A child's first model call otherwise builds (and so un-shares) about 15 MB of litellm's
    lazily made objects; made here, they are inherited copy-on-write. Three things the call
    leaves behind would break a fork: the stub's connection thread (closed with litellm's
    cached HTTP clients, which children must not share anyway), and litellm's logging
    executor worker, which a child would believe alive while no thread serves its queue.

    Raises:
        RuntimeError: a thread the call started is still running.
    """
    import litellm
    from litellm.litellm_core_utils.thread_pool_executor import executor

    from robotlab.robot.robot import Robot
    from robotlab.testing import serve_script

    before = set(threading.enumerate())
    with serve_script([{"content": "warm"}]) as api:
        # Through a whole Robot.run, so the robot's own first-run paths are warm too.
        robot = Robot(name="warm-up", system_prompt="Warm up.", model="openai/warm-up", api_base=api,
                      api_key="warm-up")
        robot.run("warm up")
        _close_cached_clients(litellm.in_memory_llm_clients_cache)
    _stop_workers(executor)
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=5)
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    if left:
        raise RuntimeError(f"threads still running after the warm-up call: {', '.join(left)}")


def _close_cached_clients(cache: Any) -> None:
    for client in list(cache.cache_dict.values()):
        close = getattr(client, "close", None)
        if callable(close) and not inspect.iscoroutinefunction(close):
            with contextlib.suppress(Exception):
                close()
    cache.flush_cache()


def _stop_workers(executor: Any) -> None:
    """Let a ThreadPoolExecutor's workers exit, leaving it usable and threadless.

    There is no public restart: these are the fields ``shutdown`` sets and ``submit`` reads in
    CPython 3.11-3.13 (``concurrent/futures/thread.py``). The next ``submit`` (in a child)
    starts a fresh worker.
    """
    executor.shutdown(wait=True)
    executor._shutdown = False
    executor._threads.clear()
    executor._idle_semaphore = threading.Semaphore(0)
    executor._work_queue = queue.SimpleQueue()


class ForkServer:
    """The select loop: accept requests, fork children, answer once each child is ready."""

    def __init__(self, listener: socket.socket, parent_pid: int) -> None:
        self.listener = listener
        self.parent_pid = parent_pid
        self.selector = selectors.DefaultSelector()
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

    def _child_ready(self, key: Any) -> None:
        _, conn, pid = key.data
        ready_r = key.fileobj
        self.selector.unregister(ready_r)
        data = os.read(ready_r, 65536).decode(errors="replace").strip()
        os.close(ready_r)
        if data.startswith("ready"):
            _answer(conn, {"ok": True, "pid": pid, "instance": data.partition(" ")[2]})
            return
        code = _exit_code(pid)
        error = data.partition(" ")[2] if data.startswith("error") else f"the robot exited with code {code} before it was ready"
        _answer(conn, {"ok": False, "pid": pid, "error": error, "exit_code": code})

    def _reap(self, key: Any) -> None:
        os.read(self._signal_r, 4096)
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

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

    from .daemon import DaemonConfig
    from .hosting import RobotSpec, host

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        config = DaemonConfig(**request["daemon"], ready_fd=ready_fd, quiet=True)
        spec = RobotSpec.from_dict(request["robot"])
        return host(config, spec)
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
