"""Why a supervised attempt failed, as a small value that crosses the child's socket as data.

A child describes the exception that ended its work (``describe_error``); the orchestrator
ends a wait itself on a signal or the iteration's deadline (``Failure.interrupted()``,
``Failure.timed_out()``). On the wire a failure is a plain dict (``to_wire``/``from_wire``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from robotlab.errors import InferenceError, RemoteError
from robotlab.errors.causes import PERMANENT, Cause, classify, classify_exception

__all__ = ["CHILD_EXITED", "INTERRUPTED", "ITERATION_TIMEOUT", "PERMANENT", "Cause", "Failure",
           "classify", "describe_error"]

INTERRUPTED = "Interrupted"
ITERATION_TIMEOUT = "IterationTimeout"
CHILD_EXITED = "ChildExited"


@dataclasses.dataclass(frozen=True)
class Failure:
    """One failed attempt: the class that was raised, its message, and what it implies.

    Attributes:
        error_class: the exception class name (or ``Interrupted``/``IterationTimeout``/
            ``ChildExited``).
        message: the exception's message.
        cause: what kind of failure it is (``permanent`` follows from it).
        retry_after: seconds the provider asked us to wait, if it said.
    """

    error_class: str
    message: str
    cause: Cause = Cause.OTHER
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
    def auth(self) -> bool:
        """True when the provider refused the credentials."""
        return self.cause == Cause.AUTH

    @property
    def permanent(self) -> bool:
        """True when retrying cannot help (authentication, DNS, model not found, a context
        overflow the child's compaction could not cure, a 4xx but 408/429)."""
        return self.cause in PERMANENT

    @property
    def is_interrupt(self) -> bool:
        """True when a signal, not the work, ended the attempt."""
        return self.error_class == INTERRUPTED

    def to_wire(self) -> dict[str, Any]:
        """The failure as plain data for a JSON line."""
        return {"class": self.error_class, "message": self.message, "cause": str(self.cause),
                "retry_after": self.retry_after}

    @classmethod
    def from_wire(cls, data: dict[str, Any] | None) -> Failure:
        """Read ``to_wire``'s dict (missing fields take their defaults)."""
        data = data or {}
        retry_after = data.get("retry_after")
        cause = data.get("cause")
        return cls(str(data.get("class") or CHILD_EXITED), str(data.get("message") or ""),
                   (Cause(cause) if isinstance(cause, str) and cause in Cause.__members__.values()
                    else Cause.OTHER),
                   float(retry_after) if isinstance(retry_after, int | float) else None)


def describe_error(exc: BaseException) -> Failure:
    """An exception as a ``Failure``: class, message, cause, Retry-After seconds.

    An ``InferenceError`` keeps the cause the library gave it where the provider's exception
    became ours; a ``RemoteError`` (raised when a supervised child failed) is described by the
    class it names.
    """
    if isinstance(exc, RemoteError):
        return Failure(exc.type_name, exc.detail, classify(exc.type_name, None, exc.detail))
    given = exc.cause if isinstance(exc, InferenceError) else None
    cause = (Cause(given) if given is not None and given in Cause.__members__.values()
             else classify_exception(exc))
    origin = exc.__cause__ or exc.__context__
    retry_after = getattr(exc, "retry_after", None) or getattr(origin, "retry_after", None)
    return Failure(type(exc).__name__, str(exc), cause,
                   float(retry_after) if isinstance(retry_after, int | float) else None)
