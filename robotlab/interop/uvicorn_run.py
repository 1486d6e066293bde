"""An ASGI app of the crew served by uvicorn on a listening socket until SIGTERM or Ctrl-C, with
tasks of its own running beside it (a watcher of the bus) and ended with it."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import anyio


async def on_signal(stop: Callable[[], None]) -> None:
    """Call ``stop`` on each SIGTERM or SIGINT, until cancelled (a clean exit: the bus client then
    says goodbye). The receiver stays open to the end, so a signal raised again late is heard
    too."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            stop()


async def serve_app(app: Any, sock: socket.socket,
                    *beside: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Serve ``app`` on ``sock`` until a signal, running each of ``beside`` meanwhile."""
    import uvicorn

    # log_config=None: uvicorn's lines go through this process's handler (JSON under
    # --log-format json) instead of handlers of its own.
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", log_config=None))

    def stop() -> None:  # uvicorn's own way to end: it closes the connections, then serve() returns
        http.should_exit = True

    async with anyio.create_task_group() as tasks:
        for task in beside:
            tasks.start_soon(task)
        tasks.start_soon(on_signal, stop)
        await http.serve(sockets=[sock])
        tasks.cancel_scope.cancel()
