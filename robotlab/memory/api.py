"""The interface every memory offers, local (``memory.py``) or remote (``memory_remote.py``).

Robots and networks are typed against :class:`MemoryStore`, so a member in another process
gets a remote memory with the same calls and the same errors.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from robotlab.errors import AwaitTimeout
from robotlab.memory.notify import Callback

__all__ = ["MemoryStore", "Wait", "WriterSlot", "timeout_error"]

Wait = bool | float | int | None


@runtime_checkable
class MemoryStore(Protocol):
    """What a robot or a network needs from a memory, local or remote."""

    network_name: str | None
    current_writer: str | None

    def get(self, *keys: str, wait: Wait = False) -> Any: ...
    def set(self, key: str, value: Any, **kw: Any) -> Any: ...
    def delete(self, key: str) -> Any: ...
    def has_key(self, key: str) -> bool: ...
    def keys(self) -> list[str]: ...
    def subscribe(self, *keys: str, callback: Callback | None = None) -> str: ...
    def subscribe_pattern(self, pattern: str, callback: Callback | None = None) -> str: ...
    def unsubscribe(self, subscription_id: str) -> bool: ...
    def __getitem__(self, key: str) -> Any: ...
    def __setitem__(self, key: str, value: Any) -> None: ...


def timeout_error(key: str, wait: Wait) -> AwaitTimeout:
    """The error a read with ``wait=N`` raises: ``Timeout waiting for :<key> after N seconds``.

    ``0.1`` reads as ``0.1`` and ``2.0`` as ``2``, as Ruby prints them.
    """
    label = str(int(wait)) if isinstance(wait, float) and wait.is_integer() else str(wait)
    return AwaitTimeout(f"Timeout waiting for :{key} after {label} seconds")


class WriterSlot:
    """The ``current_writer`` of a memory: one value per thread.

    A robot sets it for the length of a run, so robots of one network running in parallel
    threads each stamp their own name on what they write. A thread that never set it sees
    ``None``.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def current_writer(self) -> str | None:
        """Name stamped as ``writer`` on changes made from this thread."""
        return getattr(self._local, "name", None)

    @current_writer.setter
    def current_writer(self, name: str | None) -> None:
        self._local.name = name

    @contextlib.contextmanager
    def writing_as(self, name: str | None) -> Iterator[None]:
        """Make ``name`` the writer for the block, restoring the previous one after it."""
        previous = self.current_writer
        self.current_writer = name
        try:
            yield
        finally:
            self.current_writer = previous
