"""Tools with side effects: an idempotency key for each of their calls.

A tool that changes the world (charges a card, sends a mail, opens a ticket) declares it:
``side_effects = True`` on a ``Tool`` subclass, ``Tool.create(..., side_effects=True)`` or
``@tool(side_effects=True)``. Each of its calls then runs with an idempotency key that
:func:`idempotency_key` returns inside the call: what the robot is working on (a bus message's
sender instance and id, or one run's own id) and the call's number among the run's side-effect
calls, ``"alice-1/m42:2"``. A message redelivered after a crash, a cut or a broker restart keeps
its id, so its run's calls get the same keys again, in the same order: a service that takes an
idempotency key (most payment and ticket APIs do) does the work once.
"""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager
from contextvars import ContextVar

__all__ = ["calling", "idempotency_key", "key_for", "work_id", "working_on"]

_work: ContextVar[str | None] = ContextVar("robotlab_work", default=None)
_key: ContextVar[str | None] = ContextVar("robotlab_idempotency_key", default=None)


class _Set:
    """A context variable set for a block. A class rather than a generator: a robot enters one
    for every bus message it handles, and a generator-based context manager costs three times as
    much."""

    __slots__ = ("value", "var", "token")

    def __init__(self, var: ContextVar[str | None], value: str) -> None:
        self.var, self.value = var, value

    def __enter__(self) -> None:
        self.token = self.var.set(self.value)

    def __exit__(self, *exc_info: object) -> None:
        self.var.reset(self.token)


def working_on(work: str) -> AbstractContextManager[None]:
    """Run the block as work on ``work`` (a bus message: ``"sender_instance/id"``)."""
    return _Set(_work, work)


def work_id() -> str:
    """What the current run works on: the message set by :func:`working_on`, else a fresh id
    (a run nobody sent has nothing to be redelivered, so its keys only need to be unique)."""
    return _work.get() or f"run-{uuid.uuid4().hex}"


def key_for(work: str, index: int) -> str:
    """The key of the ``index``-th (from 1) side-effect call of the run working on ``work``."""
    return f"{work}:{index}"


def calling(key: str) -> AbstractContextManager[None]:
    """Run a side-effect tool's call with its key."""
    return _Set(_key, key)


def idempotency_key() -> str | None:
    """The idempotency key of the side-effect tool call running now; None outside one (a tool
    that did not declare ``side_effects``, or code not called as a tool)."""
    return _key.get()
