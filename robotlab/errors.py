"""Every error robotlab raises, in one shallow tree.

Errors carry data and never act: the boundary that catches one (the robot loop, the broker
dispatch, a CLI or daemon entry point) decides whether to log it, reply with it or exit with
its ``exit_code`` (sysexits numbers: 64 usage, 65 data, 69 unavailable, 70 software,
75 temporary failure, 76 protocol, 78 configuration).

::

    RobotlabError                      70  root (Ruby: RobotLab::Error)
    ├── ConfigError                    78  bad settings, template or argument
    │   └── DependencyError            78  an optional package is missing
    ├── ToolNotFoundError              64  a tool name that nothing provides
    ├── InferenceError                 75  the provider failed, or a budget was crossed by a call
    │   └── ToolLoopError              70  max_tool_rounds tripped (never retryable)
    ├── MCPError                       69  an MCP server failed (``retryable`` per instance)
    ├── ToolError                      70  a tool failed (``retryable`` per instance)
    ├── BudgetExceeded                 75  refused before spending: the budget is used up
    ├── BoundaryError                  65  a payload cannot cross a process boundary
    ├── AwaitTimeout                   75  Memory.get(..., wait=N) ran out of time
    ├── DelegationTimeout              75  DelegationFuture.value(timeout=) ran out of time
    ├── TemporarilyUnavailable         75  a daemon waited its bounded time (a broker, a bind address)
    ├── RemoteError                    70  a robot in another process raised (its class named)
    ├── ToError                        70  robot-to failed (Ruby: RobotLab::To::Error)
    │   ├── PermanentError             70  not worth retrying (git failed, auth refused)
    │   ├── CommitFailedError          70  git commit refused; its output attached
    │   ├── QualityError               70  the robot repeats itself (reason attached)
    │   ├── SetupError                 64  robot-to cannot start here (no commit, dirty tree)
    │   └── AbortError                  0  a clean stop with a reason (a stop condition)
    └── BusError                       69  the bus failed (Ruby: BusError)
        ├── ProtocolError              76  frames that do not parse (raw frames attached)
        ├── PeerUnavailable            69  the broker cannot be reached
        ├── DeliveryFailed             69  the broker reports a message's fate
        │   ├── Undeliverable          69  no live robot has that name
        │   ├── Nacked                 69  the receiver refused it (reason attached)
        │   ├── Busy                   75  the receiver has too much in flight
        │   └── DeliveryTimeout        75  the receiver never acked in time
        └── ReplyTimeout               75  acked (or not) but no reply before the deadline
"""

from __future__ import annotations

from typing import Any

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
    "InferenceError",
    "MCPError",
    "Nacked",
    "PeerUnavailable",
    "PermanentError",
    "ProtocolError",
    "QualityError",
    "RemoteError",
    "ReplyTimeout",
    "RobotlabError",
    "SetupError",
    "TemporarilyUnavailable",
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

    exit_code = 70


class ConfigError(RobotlabError):
    """Bad settings, a missing template, or an argument that cannot work."""

    exit_code = 78


ConfigurationError = ConfigError
"""The Ruby name, kept as an alias."""


class DependencyError(ConfigError):
    """An optional package needed for this feature is not installed."""


class ToolNotFoundError(RobotlabError):
    """A tool was asked for by a name that no attached tool has."""

    exit_code = 64


class InferenceError(RobotlabError):
    """The LLM provider failed, or the call that just finished crossed a budget."""

    exit_code = 75


class ToolLoopError(InferenceError):
    """The circuit breaker tripped: more tool calls than ``max_tool_rounds`` allows."""

    exit_code = 70


class _MaybeRetryable(RobotlabError):
    """An error whose retryability is decided where it is raised."""

    def __init__(self, message: str = "", *, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable


class MCPError(_MaybeRetryable):
    """An MCP server failed to connect, answer or stay up."""

    exit_code = 69


class ToolError(_MaybeRetryable):
    """A tool failed; the model sees ``Error (<tool>): <message>``."""


class BudgetExceeded(RobotlabError):
    """Refused up front: the token or cost budget is already used up. Nothing was spent."""

    exit_code = 75


class BoundaryError(RobotlabError):
    """A payload holds something that cannot cross a process boundary (Ruby: RactorBoundaryError).

    Attributes:
        type_name: the offending value's type.
        path: where it sits in the payload, e.g. ``content["items"][2]``.
    """

    exit_code = 65

    def __init__(self, message: str, *, type_name: str = "", path: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name
        self.path = path


class AwaitTimeout(RobotlabError):
    """A memory read with ``wait=`` timed out."""

    exit_code = 75


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

    exit_code = 75


class TemporarilyUnavailable(RobotlabError):
    """What a daemon waits for (a broker to answer, a bind address to appear) did not come in
    the time it was given; a later start may well succeed, so a service manager restarts it."""

    exit_code = 75


class ToError(RobotlabError):
    """robot-to failed (Ruby: RobotLab::To::Error)."""


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

    exit_code = 64


class AbortError(ToError):
    """A clean stop: a stop condition fired. ``reason`` is shown in the exit summary.

    ``exit_code`` is 0 for a stop condition and 1 for an abort (too many failures).
    """

    exit_code = 0

    def __init__(self, reason: str, *, exit_code: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code


class BusError(RobotlabError):
    """The message bus failed."""

    exit_code = 69


class ProtocolError(BusError):
    """Frames that do not parse. ``frames`` holds the raw frames for diagnosis."""

    exit_code = 76

    def __init__(self, message: str, *, code: str = "malformed", frames: list[bytes] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.frames = frames or []


class PeerUnavailable(BusError):
    """The broker could not be reached."""


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

    exit_code = 75
    reason = "busy"


class DeliveryTimeout(DeliveryFailed):
    """The receiver did not ack within the ack timeout."""

    exit_code = 75
    reason = "timeout"


class ReplyTimeout(BusError):
    """No reply came before the deadline. ``delivery`` says what became of the request."""

    exit_code = 75

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
    ``retryable=True``; any other ``InferenceError`` is; everything else is not.
    """
    if error is None or isinstance(error, ToolLoopError):
        return False
    if isinstance(error, _MaybeRetryable):
        return error.retryable is True
    return isinstance(error, InferenceError)


def retryable_classes() -> tuple[type[RobotlabError], ...]:
    """The classes whose instances are retryable by default."""
    return (InferenceError,)
