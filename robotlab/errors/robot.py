"""Errors a robot meets at work: its tools, its model, its budget, what it sends to another
process and what it waits for; and which of them are worth retrying."""

from __future__ import annotations

from robotlab.errors.causes import PERMANENT
from robotlab.errors.root import RobotlabError
from robotlab.exit_codes import ExitCode

__all__ = [
    "AwaitTimeout",
    "BoundaryError",
    "BudgetExceeded",
    "DelegationTimeout",
    "InferenceError",
    "MCPError",
    "RemoteError",
    "SandboxUnavailable",
    "ToolError",
    "ToolLoopError",
    "ToolNotFoundError",
    "retryable",
    "retryable_classes",
]


class ToolNotFoundError(RobotlabError):
    """A tool was asked for by a name that no attached tool has."""

    exit_code: int = ExitCode.USAGE


class InferenceError(RobotlabError):
    """The LLM provider failed, or the call that just finished crossed a budget.

    Attributes:
        cause: why the call failed (a ``robotlab.errors.causes.Cause`` value such as
            ``context_window`` or ``timeout``), None when no provider call failed.
        status_code: the provider's HTTP status, when it gave one.
    """

    exit_code: int = ExitCode.TEMPFAIL
    status_code: int | None = None

    def __init__(self, message: str = "", *, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause

    @property
    def permanent(self) -> bool:
        """True when sending the same request again cannot succeed (see ``causes.PERMANENT``)."""
        return self.cause in PERMANENT


class ToolLoopError(InferenceError):
    """The circuit breaker tripped: more tool calls than ``max_tool_rounds`` (else the global
    ``max_tool_iterations``) allows."""

    exit_code: int = ExitCode.SOFTWARE


class _MaybeRetryable(RobotlabError):
    """An error whose retryability is decided where it is raised."""

    def __init__(self, message: str = "", *, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable


class MCPError(_MaybeRetryable):
    """An MCP server failed to connect, answer or stay up."""

    exit_code: int = ExitCode.UNAVAILABLE


class ToolError(_MaybeRetryable):
    """A tool failed; the model sees ``Error (<tool>): <message>``."""


class SandboxUnavailable(ToolError):
    """``sandbox.enabled`` is true but nothing on this machine can enforce the ceiling.

    The script was not run: a sandbox that cannot confine never runs a script unconfined.
    """

    exit_code: int = ExitCode.UNAVAILABLE


class BudgetExceeded(RobotlabError):
    """Refused up front: the token or cost budget is already used up. Nothing was spent."""

    exit_code: int = ExitCode.TEMPFAIL


class BoundaryError(RobotlabError):
    """A payload holds something that cannot cross a process boundary (Ruby: RactorBoundaryError).

    Attributes:
        type_name: the offending value's type.
        path: where it sits in the payload, e.g. ``content["items"][2]``.
    """

    exit_code: int = ExitCode.DATA

    def __init__(self, message: str, *, type_name: str = "", path: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name
        self.path = path


class AwaitTimeout(RobotlabError):
    """A memory read with ``wait=`` timed out."""

    exit_code: int = ExitCode.TEMPFAIL


class RemoteError(RobotlabError):
    """A robot serving in another process raised while running a task sent to it.

    Attributes:
        type_name: the class name of the error raised over there (``ValueError``...).
        detail: its message.
    """

    def __init__(self, type_name: str, detail: str = "") -> None:
        super().__init__(f"{type_name}: {detail}" if detail else type_name)
        self.type_name = type_name
        self.detail = detail


class DelegationTimeout(RobotlabError):
    """A delegation future was not settled within the timeout."""

    exit_code: int = ExitCode.TEMPFAIL


def retryable(error: BaseException | None) -> bool:
    """Tell whether retrying the operation that raised ``error`` may succeed.

    ``ToolLoopError`` never is; ``MCPError`` and ``ToolError`` are when raised with
    ``retryable=True``; an ``InferenceError`` is unless its cause is permanent (a context
    overflow, a refused key, an unknown model, a bad request: the loops that retry model calls
    read the same cause); everything else is not.
    """
    if error is None or isinstance(error, ToolLoopError):
        return False
    if isinstance(error, _MaybeRetryable):
        return error.retryable is True
    return isinstance(error, InferenceError) and not error.permanent


def retryable_classes() -> tuple[type[RobotlabError], ...]:
    """The classes whose instances are retryable by default."""
    return (InferenceError,)
