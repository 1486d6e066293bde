"""``robotlab web``'s server: uvicorn on a socket already listening, the watcher beside it, and
SIGTERM or Ctrl-C ending both (the browsers' streams too, so uvicorn is not left waiting).

The console says where it serves only once SIGTERM and Ctrl-C are in its hands: a SIGTERM sent as
soon as that line appears ends it cleanly (exit 0), never by the signal's default action."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable

import anyio
import anyio.abc

from .app import Watcher, build_app
from .console import Console


async def _on_signal(stop: Callable[[], None], *,
                     task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            stop()


async def _serve(console: Console, interval: float, sock: socket.socket, key: str | None,
                 on_ready: Callable[[str], None] | None) -> None:
    import uvicorn

    watcher = Watcher(console, interval)
    # log_config=None: uvicorn's lines go through this process's handler (JSON under
    # --log-format json) instead of handlers of its own.
    http = uvicorn.Server(uvicorn.Config(build_app(watcher, key), log_level="warning",
                                         lifespan="off", log_config=None,
                                         timeout_graceful_shutdown=2))

    def stop() -> None:
        # The signal comes here, not to uvicorn's handler, so sse-starlette does not see the
        # shutdown: the watcher ends the browsers' streams, or they would hold uvicorn open.
        watcher.close()
        # A look in hand waits on the broker's answer in a thread the loop cannot cancel; with
        # the broker down that is the whole admin timeout. Closing the client ends it at once.
        console.client.close()
        http.should_exit = True

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watcher.run)
        await tasks.start(_on_signal, stop)
        if on_ready is not None:
            on_ready(url_of(sock))
        await http.serve(sockets=[sock])
        tasks.cancel_scope.cancel()


def url_of(sock: socket.socket) -> str:
    """The page's address for a listening socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(console: Console, interval: float, sock: socket.socket,
          on_ready: Callable[[str], None] | None = None, key: str | None = None) -> None:
    """Serve the console on the listening ``sock`` until SIGTERM or Ctrl-C (only to requests
    that carry ``key``, when there is one)."""
    anyio.run(_serve, console, interval, sock, key, on_ready)
