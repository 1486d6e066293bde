"""A blocking provider call held to a deadline: the call runs on a worker thread, the caller waits.

An HTTP client's time-out bounds each read, not the whole call: a streamed reply that keeps
sending chunks never trips it, and connect, queue and every read each get the full allowance.
Here the caller waits on a queue for at most the time left, so it is back by its deadline
whatever the socket does; the worker, told it was abandoned, closes the stream at its next
chunk, which is what tells a streaming server to stop generating.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["CallTimedOut", "bounded_items"]

_ITEM, _END, _ERROR = 0, 1, 2

WAIT_STEP_SECONDS = 0.5
"""The caller's longest single wait. A signal that came just before the wait blocked, or that the
kernel gave another thread, runs its Python handler (Ctrl-C's ``KeyboardInterrupt``) only when
the waiting thread wakes: this is how late that can be, not the whole model call."""


class CallTimedOut(Exception):
    """The deadline passed before the call finished; the worker has been told to let go."""


def _close(stream: Any) -> None:
    """Close a provider stream and the HTTP response under it.

    litellm wraps openai's ``Stream``.
    """
    for holder in (getattr(stream, "completion_stream", None), stream):
        close = getattr(holder, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # closing is best effort: the connection may already be gone
                pass


def _work(open_call: Callable[[], Any], streaming: bool, out: queue.SimpleQueue[tuple[int, Any]],
          abandoned: threading.Event) -> None:
    try:
        result = open_call()
        if not streaming:
            out.put((_ITEM, result))
            return
        try:
            for chunk in result:
                if abandoned.is_set():
                    break
                out.put((_ITEM, chunk))
        finally:
            _close(result)
        out.put((_END, None))
    except BaseException as exc:  # handed to the caller's thread, which raises it
        out.put((_ERROR, exc))


def bounded_items(open_call: Callable[[], Any], deadline: float | None, *,
                  streaming: bool) -> Iterator[Any]:
    """Yield what ``open_call()`` returns (one item) or, when ``streaming``, each item it iterates.

    ``deadline`` is a ``time.monotonic()``; None runs the call inline with no bound.

    Raises:
        CallTimedOut: the deadline passed first (the worker stops at its next item).
        Exception: whatever the call raised, in the caller's thread.
    """
    if deadline is None:
        result = open_call()
        if streaming:
            yield from _iterate_and_close(result)
        else:
            yield result
        return
    out: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
    abandoned = threading.Event()
    worker = threading.Thread(target=_work, args=(open_call, streaming, out, abandoned),
                              name="robotlab-model-call", daemon=True)
    worker.start()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CallTimedOut
            try:
                kind, value = out.get(timeout=min(left, WAIT_STEP_SECONDS))
            except queue.Empty:
                continue  # the deadline is checked again above
            if kind == _ERROR:
                raise value
            if kind == _END:
                return
            yield value
            if not streaming:
                return
    finally:
        abandoned.set()


def _iterate_and_close(stream: Iterable[Any]) -> Iterator[Any]:
    try:
        yield from stream
    finally:
        _close(stream)
