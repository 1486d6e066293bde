"""Which memory a run uses, and stamping the robot's name on what it writes there."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["active_memory"]


@contextmanager
def active_memory(writer: str, own: Any, make_own: Callable[[], Any], memory: Any, network: Any,
                  network_memory: Any) -> Iterator[Any]:
    """The run's memory: the network's, else the robot's own; ``memory=`` replaces or merges.

    ``own`` is the robot's own memory if it has made one (None otherwise) and ``make_own``
    makes it; ``writer`` is the robot's name.

    A Memory object given as ``memory`` replaces the active one; a dict is merged into it (each
    key through ``set``, so subscribers fire). While the run lasts the memory's
    ``current_writer`` is the robot's name; the previous writer comes back afterwards.
    """
    active = network_memory or getattr(network, "memory", None) or own
    if memory is not None and not isinstance(memory, dict):
        active = memory
    elif isinstance(memory, dict) and active is None:
        active = make_own()
    if active is None:
        yield None
        return
    previous = active.current_writer
    active.current_writer = writer
    try:
        for key, value in (memory.items() if isinstance(memory, dict) else ()):
            active.set(key, value)
        yield active
    finally:
        active.current_writer = previous
