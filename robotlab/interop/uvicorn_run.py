"""An ASGI app of the crew served by uvicorn on a listening socket until SIGTERM or Ctrl-C, with
tasks of its own running beside it (a watcher of the bus) and ended with it.

The server says it is ready only once SIGTERM and Ctrl-C are in its hands, so a SIGTERM sent as
soon as it says so ends it cleanly (exit 0), never by the signal's default action."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.abc


async def on_signal(stop: Callable[[], None], *,
                    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Call ``stop`` on each SIGTERM or SIGINT, until cancelled (a clean exit: the bus client then
    says goodbye). The receiver stays open to the end, so a signal raised again late is heard
    too; started with ``tasks.start``, it returns once the receiver is open."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            stop()


async def serve_app(app: Any, sock: socket.socket,
                    *beside: Callable[[], Coroutine[Any, Any, None]],
                    ready: Callable[[], None] | None = None) -> None:
    """Serve ``app`` on ``sock`` until a signal, running each of ``beside`` meanwhile; ``ready``
    is called once a signal would end it cleanly."""
    import uvicorn

    # log_config=None: uvicorn's lines go through this process's handler (JSON under
    # --log-format json) instead of handlers of its own.
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", log_config=None))

    def stop() -> None:  # uvicorn's own way to end: it closes the connections, then serve() returns
        http.should_exit = True

    async with anyio.create_task_group() as tasks:
        for task in beside:
            tasks.start_soon(task)
        await tasks.start(on_signal, stop)
        if ready is not None:
            ready()
        await http.serve(sockets=[sock])
        tasks.cancel_scope.cancel()
