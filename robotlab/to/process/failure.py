"""Why a supervised attempt failed, as a small value that crosses the child's socket as data.

A child describes the exception that ended its work (``describe_error``); the orchestrator
ends a wait itself on a signal or the iteration's deadline (``Failure.interrupted()``,
``Failure.timed_out()``). On the wire a failure is a plain dict (``to_wire``/``from_wire``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from robotlab.errors import RemoteError

INTERRUPTED = "Interrupted"
ITERATION_TIMEOUT = "IterationTimeout"
CHILD_EXITED = "ChildExited"
_AUTH = re.compile(r"invalid api key|unauthorized|authentication failed", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Failure:
    """One failed attempt: the class that was raised, its message, and what it implies.

    Attributes:
        error_class: the exception class name (or ``Interrupted``/``IterationTimeout``/``ChildExited``).
        message: the exception's message.
        auth: the provider refused the credentials.
        retry_after: seconds the provider asked us to wait, if it said.
    """

    error_class: str
    message: str
    auth: bool = False
    retry_after: float | None = None

    @classmethod
    def interrupted(cls) -> Failure:
        """The orchestrator stopped the work because a signal arrived."""
        return cls(INTERRUPTED, "stopped by a signal")

    @classmethod
    def timed_out(cls) -> Failure:
        """The orchestrator stopped the work at the iteration's deadline."""
        return cls(ITERATION_TIMEOUT, "the iteration ran past --iteration-timeout")

    @classmethod
    def child_exited(cls, message: str = "the child process exited unexpectedly") -> Failure:
        """The child died (or was never running) before it answered."""
        return cls(CHILD_EXITED, message)

    @property
    def is_interrupt(self) -> bool:
        """True when a signal, not the work, ended the attempt."""
        return self.error_class == INTERRUPTED

    def to_wire(self) -> dict[str, Any]:
        """The failure as plain data for a JSON line."""
        return {"class": self.error_class, "message": self.message, "auth": self.auth, "retry_after": self.retry_after}

    @classmethod
    def from_wire(cls, data: dict[str, Any] | None) -> Failure:
        """Read ``to_wire``'s dict (missing fields take their defaults)."""
        data = data or {}
        retry_after = data.get("retry_after")
        return cls(str(data.get("class") or CHILD_EXITED), str(data.get("message") or ""), bool(data.get("auth")),
                   float(retry_after) if isinstance(retry_after, int | float) else None)


def describe_error(exc: BaseException) -> Failure:
    """An exception as a ``Failure``: class, message, auth flag, Retry-After seconds.

    A ``RemoteError`` (raised when a supervised child failed) is described by the class it names.
    """
    if isinstance(exc, RemoteError):
        auth = "Unauthorized" in exc.type_name or "Authentication" in exc.type_name or bool(_AUTH.search(exc.detail))
        return Failure(exc.type_name, exc.detail, auth)
    cause = exc.__cause__ or exc.__context__
    names = f"{type(exc).__name__} {type(cause).__name__ if cause else ''}"
    status = getattr(exc, "status", None) or getattr(exc, "status_code", None) or getattr(cause, "status_code", None)
    auth = "Unauthorized" in names or "Authentication" in names or status == 401 or bool(_AUTH.search(str(exc)))
    retry_after = getattr(exc, "retry_after", None) or getattr(cause, "retry_after", None)
    return Failure(type(exc).__name__, str(exc), auth,
                   float(retry_after) if isinstance(retry_after, int | float) else None)
