"""Tools with side effects: an idempotency key for each of their calls.

A tool that changes the world (charges a card, sends a mail, opens a ticket) declares it:
``side_effects = True`` on a ``Tool`` subclass, ``Tool.create(..., side_effects=True)`` or
``@tool(side_effects=True)``. Each of its calls then runs with an idempotency key that
:func:`idempotency_key` returns inside the call: what the robot is working on (a bus message's
sender instance and id, or one run's own id) and the call's number among the run's side-effect
calls, ``"alice-1/m42:2"``. A message redelivered after a crash, a cut or a broker restart keeps
its id, so its run's calls get the same keys again, in the same order: a service that takes an
idempotency key (most payment and ticket APIs do) does the work once.

For one that does not, the broker keeps with the message the key of every side-effect call that
returned (its robot reports each one), and a later attempt of the message is told them: inside a
call :func:`done_before` is True when an earlier attempt completed this very call, and
:func:`completed` names all of them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any

__all__ = ["calling", "completed", "done_before", "idempotency_key", "key_for", "reporter",
           "work_id", "working_on"]

Report = Callable[[str], None]
"""Called with the key of each side-effect call that returned (a bus client's
``effect_done`` for the message worked on)."""


class _Work:
    __slots__ = ("id", "done", "report")

    def __init__(self, id: str, done: frozenset[str], report: Report | None) -> None:
        self.id, self.done, self.report = id, done, report


_work: ContextVar[_Work | None] = ContextVar("robotlab_work", default=None)
_key: ContextVar[str | None] = ContextVar("robotlab_idempotency_key", default=None)


class _Set:
    """A context variable set for a block. A class rather than a generator: a robot enters one
    for every bus message it handles, and a generator-based context manager costs three times as
    much."""

    __slots__ = ("value", "var", "token")

    def __init__(self, var: ContextVar[Any], value: Any) -> None:
        self.var, self.value = var, value

    def __enter__(self) -> None:
        self.token = self.var.set(self.value)

    def __exit__(self, *exc_info: object) -> None:
        self.var.reset(self.token)


def working_on(work: str, done: Iterable[str] = (),
               report: Report | None = None) -> AbstractContextManager[None]:
    """Run the block as work on ``work`` (a bus message: ``"sender_instance/id"``), whose
    earlier attempts completed the side-effect calls ``done`` (their keys); ``report`` is told
    the key of each side-effect call that returns."""
    return _Set(_work, _Work(work, frozenset(done), report))


def work_id() -> str:
    """What the current run works on: the message set by :func:`working_on`, else a fresh id
    (a run nobody sent has nothing to be redelivered, so its keys only need to be unique)."""
    work = _work.get()
    return work.id if work is not None else f"run-{uuid.uuid4().hex}"


def reporter() -> Report | None:
    """What to tell of each side-effect call that returns in the current run: None outside a
    bus message's."""
    work = _work.get()
    return None if work is None else work.report


def completed() -> frozenset[str]:
    """The keys of the side-effect calls that earlier attempts of the message worked on now
    completed (the broker kept them): empty on a first attempt, or outside a bus message."""
    work = _work.get()
    return frozenset() if work is None else work.done


def done_before(key: str | None = None) -> bool:
    """True when an earlier attempt of the message completed the side-effect call ``key``
    (None: the call running now, :func:`idempotency_key`): a tool whose service takes no
    idempotency key checks this before doing the work again."""
    key = key if key is not None else _key.get()
    return key is not None and key in completed()


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
