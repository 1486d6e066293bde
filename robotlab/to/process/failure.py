"""Why a supervised attempt failed, as a small value that crosses the child's socket as data.

A child describes the exception that ended its work (``describe_error``); the orchestrator
ends a wait itself on a signal or the iteration's deadline (``Failure.interrupted()``,
``Failure.timed_out()``). On the wire a failure is a plain dict (``to_wire``/``from_wire``).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any

from robotlab.errors import RemoteError

INTERRUPTED = "Interrupted"
ITERATION_TIMEOUT = "IterationTimeout"
CHILD_EXITED = "ChildExited"
_AUTH = re.compile(r"invalid api key|incorrect api key|unauthorized|authentication failed", re.IGNORECASE)
_DNS = re.compile(r"name or service not known|nodename nor servname|getaddrinfo failed|"
                  r"temporary failure in name resolution|no address associated", re.IGNORECASE)
_CONTEXT = re.compile(r"context.?window|context length|maximum context", re.IGNORECASE)
_CONNECTION = re.compile(r"connection refused|connection reset|connection error|connect call failed|"
                         r"server disconnected|remote end closed", re.IGNORECASE)
_TIMEOUT = re.compile(r"timed? ?out", re.IGNORECASE)


class Cause(enum.StrEnum):
    """What kind of failure it is, which decides whether retrying can help."""

    AUTH = "auth"
    MODEL_NOT_FOUND = "model_not_found"
    HOST_NOT_FOUND = "host_not_found"
    BAD_REQUEST = "bad_request"
    CONTEXT_WINDOW = "context_window"
    RATE_LIMIT = "rate_limit"
    TIMEOUT = "timeout"
    SERVER = "server"
    CONNECTION = "connection"
    OTHER = "other"


PERMANENT = frozenset({Cause.AUTH, Cause.MODEL_NOT_FOUND, Cause.HOST_NOT_FOUND, Cause.BAD_REQUEST})
"""Failures that will not go away by waiting: the run ends at once instead of retrying."""


def _status_cause(status: int | None) -> Cause | None:
    if status in (401, 403):
        return Cause.AUTH
    if status == 404:
        return Cause.MODEL_NOT_FOUND
    if status == 408:
        return Cause.TIMEOUT
    if status == 429:
        return Cause.RATE_LIMIT
    if status is not None and 400 <= status < 500:
        return Cause.BAD_REQUEST
    return None


def classify(names: str, status: int | None, text: str) -> Cause:
    """The cause of a failure from its class names, HTTP status (if any) and message.

    The message is read before the status: litellm reports a failed DNS lookup or a refused
    connection as a 500, which would otherwise look like a server fault worth retrying.
    """
    if "ContextWindow" in names or _CONTEXT.search(text):
        return Cause.CONTEXT_WINDOW
    if "Authentication" in names or "Unauthorized" in names or "PermissionDenied" in names or _AUTH.search(text):
        return Cause.AUTH
    if _DNS.search(text):
        return Cause.HOST_NOT_FOUND
    if "NotFound" in names:
        return Cause.MODEL_NOT_FOUND
    by_status = _status_cause(status)
    if by_status is not None:
        return by_status
    if "RateLimit" in names:
        return Cause.RATE_LIMIT
    if "Timeout" in names or _TIMEOUT.search(text):
        return Cause.TIMEOUT
    if "Connection" in names or _CONNECTION.search(text):
        return Cause.CONNECTION
    return Cause.SERVER if status is not None and status >= 500 else Cause.OTHER


@dataclasses.dataclass(frozen=True)
class Failure:
    """One failed attempt: the class that was raised, its message, and what it implies.

    Attributes:
        error_class: the exception class name (or ``Interrupted``/``IterationTimeout``/``ChildExited``).
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
        """True when retrying cannot help (authentication, DNS, model not found, a 4xx but 408/429)."""
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
                   Cause(cause) if isinstance(cause, str) and cause in Cause.__members__.values() else Cause.OTHER,
                   float(retry_after) if isinstance(retry_after, int | float) else None)


def describe_error(exc: BaseException) -> Failure:
    """An exception as a ``Failure``: class, message, cause, Retry-After seconds.

    A ``RemoteError`` (raised when a supervised child failed) is described by the class it names.
    """
    if isinstance(exc, RemoteError):
        return Failure(exc.type_name, exc.detail, classify(exc.type_name, None, exc.detail))
    cause = exc.__cause__ or exc.__context__
    names = f"{type(exc).__name__} {type(cause).__name__ if cause else ''}"
    status = getattr(exc, "status", None) or getattr(exc, "status_code", None) or getattr(cause, "status_code", None)
    retry_after = getattr(exc, "retry_after", None) or getattr(cause, "retry_after", None)
    return Failure(type(exc).__name__, str(exc), classify(names, status if isinstance(status, int) else None, str(exc)),
                   float(retry_after) if isinstance(retry_after, int | float) else None)
