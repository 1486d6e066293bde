"""Every error robotlab raises, in one shallow tree.

Errors carry data and never act: the boundary that catches one (the robot loop, the broker
dispatch, a CLI or daemon entry point) decides whether to log it, reply with it or exit with
its ``exit_code``. There are two exit-code schemes, both declared here and nowhere else:
:class:`ExitCode` (sysexits) for ``robotlab``, ``robotd`` and the broker, and :class:`RunExit`
(the spec's 0/1/2/130) for ``robot-to``, whose errors sit under ``ToError``. A robot-to run
that ends on a stop condition is not an error: :class:`StopRun` (Ruby's ``AbortError``).

::

    RobotlabError                      70  root (Ruby: RobotLab::Error)
    ├── ConfigError                    78  bad settings, template or argument
    │   └── DependencyError            78  an optional package is missing
    ├── ToolNotFoundError              64  a tool name that nothing provides
    ├── InferenceError                 75  the provider failed, or a budget was crossed by a call
    │   └── ToolLoopError              70  max_tool_rounds tripped (never retryable)
    ├── MCPError                       69  an MCP server failed (``retryable`` per instance)
    ├── ToolError                      70  a tool failed (``retryable`` per instance)
    │   └── SandboxUnavailable         69  sandbox on, but nothing here can confine a script
    ├── BudgetExceeded                 75  refused before spending: the budget is used up
    ├── BoundaryError                  65  a payload cannot cross a process boundary
    ├── AwaitTimeout                   75  Memory.get(..., wait=N) ran out of time
    ├── DelegationTimeout              75  DelegationFuture.value(timeout=) ran out of time
    ├── RemoteError                    70  a robot in another process raised (its class named)
    ├── ToError                         1  robot-to failed (Ruby: RobotLab::To::Error)
    │   ├── PermanentError              1  not worth retrying (git failed, auth refused)
    │   ├── CommitFailedError           1  git commit refused; its output attached
    │   ├── QualityError                1  the robot repeats itself (reason attached)
    │   └── SetupError                  2  robot-to cannot start here (no commit, dirty tree)
    └── BusError                       69  the bus failed (Ruby: BusError)
        ├── ProtocolError              76  frames that do not parse (raw frames attached)
        ├── PeerUnavailable            69  the broker cannot be reached
        │   └── StandbyPassive         75  only a passive standby answered: a takeover may be under way
        ├── DeliveryFailed             69  the broker reports a message's fate
        │   ├── Undeliverable          69  no live robot has that name
        │   ├── Nacked                 69  the receiver refused it (reason attached)
        │   ├── Busy                   75  the receiver has too much in flight
        │   └── DeliveryTimeout        75  the receiver never acked in time
        └── ReplyTimeout               75  acked (or not) but no reply before the deadline

    StopRun                             0  a robot-to stop condition: not an error (Ruby: AbortError)
"""

from __future__ import annotations

from typing import Any

from robotlab.exit_codes import ExitCode, RunExit
from robotlab.inference.causes import PERMANENT

__all__ = [
    "AbortError",
    "AwaitTimeout",
    "BoundaryError",
    "BudgetExceeded",
    "BusError",
    "CommitFailedError",
    "Busy",
    "ConfigError",
    "ConfigurationError",
    "DelegationTimeout",
    "DeliveryFailed",
    "DeliveryTimeout",
    "DependencyError",
    "ExitCode",
    "InferenceError",
    "MCPError",
    "Nacked",
    "PeerUnavailable",
    "StandbyPassive",
    "PermanentError",
    "ProtocolError",
    "QualityError",
    "RemoteError",
    "ReplyTimeout",
    "RobotlabError",
    "RunExit",
    "SandboxUnavailable",
    "SetupError",
    "StopRun",
    "ToError",
    "ToolError",
    "ToolLoopError",
    "ToolNotFoundError",
    "Undeliverable",
    "delivery_error",
    "retryable",
    "retryable_classes",
]


class RobotlabError(Exception):
    """Root of every robotlab error."""

    exit_code: int = ExitCode.SOFTWARE


class ConfigError(RobotlabError):
    """Bad settings, a missing template, or an argument that cannot work."""

    exit_code: int = ExitCode.CONFIG


ConfigurationError = ConfigError
"""The Ruby name, kept as an alias."""


class DependencyError(ConfigError):
    """An optional package needed for this feature is not installed."""


class ToolNotFoundError(RobotlabError):
    """A tool was asked for by a name that no attached tool has."""

    exit_code: int = ExitCode.USAGE


class InferenceError(RobotlabError):
    """The LLM provider failed, or the call that just finished crossed a budget.

    Attributes:
        cause: why the call failed (a ``robotlab.inference.causes.Cause`` value such as
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
    """The circuit breaker tripped: more tool calls than ``max_tool_rounds`` allows."""

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


class ToError(RobotlabError):
    """robot-to failed (Ruby: RobotLab::To::Error)."""

    exit_code: int = RunExit.ABORTED


class PermanentError(ToError):
    """Retrying cannot help: a git command failed or the provider refused the credentials."""


class CommitFailedError(ToError):
    """``git commit`` refused the iteration's changes. ``output`` holds git's words."""

    def __init__(self, output: str) -> None:
        super().__init__(f"git commit failed: {output}")
        self.output = output


class QualityError(ToError):
    """The robot's responses stopped making progress (e.g. ``repeated_tool_call``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"response quality failure: {reason}")
        self.reason = reason


class SetupError(ToError):
    """robot-to cannot start here: no commit, a dirty tree, no such run to resume."""

    exit_code: int = RunExit.CANNOT_START


class StopRun(Exception):
    """A robot-to run ends here with ``reason``: a stop condition fired (not a failure).

    Outside the error tree on purpose, like ``StopIteration``: ``exit_code`` is
    ``RunExit.STOPPED`` for a stop condition and ``RunExit.ABORTED`` when the condition is a
    failure (too many consecutive failures, a decision that timed out).
    """

    exit_code: int = RunExit.STOPPED

    def __init__(self, reason: str, *, exit_code: int = RunExit.STOPPED) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code


AbortError = StopRun
"""The Ruby name (``RobotLab::To::AbortError``) of :class:`StopRun`."""


class BusError(RobotlabError):
    """The message bus failed."""

    exit_code: int = ExitCode.UNAVAILABLE


class ProtocolError(BusError):
    """Frames that do not parse. ``frames`` holds the raw frames for diagnosis; ``ref`` the
    message's id when the header was readable enough to name one."""

    exit_code: int = ExitCode.PROTOCOL

    def __init__(self, message: str, *, code: str = "malformed", frames: list[Any] | None = None,
                 ref: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.frames = frames or []
        self.ref = ref


class PeerUnavailable(BusError):
    """The broker could not be reached."""


class StandbyPassive(PeerUnavailable):
    """No broker welcomed us, and the one that answered is a passive standby: its peer is active
    (give both brokers' addresses), or has just gone and the standby is taking over. Either way
    trying again can succeed, so it exits 75 (try again), never 69."""

    exit_code: int = ExitCode.TEMPFAIL


class DeliveryFailed(BusError):
    """The broker reports that a message was not delivered.

    Attributes:
        reason: ``undeliverable``, ``nacked``, ``busy`` or ``timeout``.
        detail: the receiver's or broker's words.
        message_id: the id of the message that failed.
        dlq_id: its id in the dead-letter queue, when it went there.
    """

    reason = "failed"

    def __init__(
        self, detail: str = "", *, message_id: str = "", to: str = "", dlq_id: str | None = None
    ) -> None:
        text = f"message {message_id or '?'} to {to or '?'} {self.reason}"
        super().__init__(f"{text}: {detail}" if detail else text)
        self.detail = detail
        self.message_id = message_id
        self.to = to
        self.dlq_id = dlq_id


class Undeliverable(DeliveryFailed):
    """No live robot has the addressed name."""

    reason = "undeliverable"


class Nacked(DeliveryFailed):
    """The receiver refused the message."""

    reason = "nacked"


class Busy(DeliveryFailed):
    """The receiver already has its limit of deliveries in flight."""

    exit_code: int = ExitCode.TEMPFAIL
    reason = "busy"


class DeliveryTimeout(DeliveryFailed):
    """The receiver did not ack within the ack timeout."""

    exit_code: int = ExitCode.TEMPFAIL
    reason = "timeout"


class ReplyTimeout(BusError):
    """No reply came before the deadline. ``delivery`` says what became of the request."""

    exit_code: int = ExitCode.TEMPFAIL

    def __init__(self, message: str, *, delivery: str = "unknown") -> None:
        super().__init__(message)
        self.delivery = delivery


_DELIVERY_ERRORS: dict[str, type[DeliveryFailed]] = {
    "undeliverable": Undeliverable,
    "nacked": Nacked,
    "busy": Busy,
    "timeout": DeliveryTimeout,
}


def delivery_error(reason: str, detail: str = "", **fields: Any) -> DeliveryFailed:
    """Build the DeliveryFailed subclass for a broker's failure ``reason``."""
    cls = _DELIVERY_ERRORS.get(reason, DeliveryFailed)
    return cls(detail, **fields)


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
