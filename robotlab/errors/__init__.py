"""Every error robotlab raises, in one shallow tree: drawn here, defined by concept beside it.

Errors carry data and never act: the boundary that catches one (the robot loop, the broker
dispatch, a CLI or daemon entry point) decides whether to log it, reply with it or exit with
its ``exit_code``. There are two exit-code schemes, both declared in ``robotlab.exit_codes``
and importable from here: :class:`ExitCode` (sysexits) for ``robotlab``, ``robotd`` and the
broker, and :class:`RunExit` (the spec's 0/1/2/130) for ``robot-to``, whose errors sit under
``ToError``. A robot-to run that ends on a stop condition is not an error: :class:`StopRun`
(Ruby's ``AbortError``). The root and the configuration errors are defined in ``root.py``, a
robot's in ``robot.py``, the bus's in ``bus.py`` and robot-to's in ``robot_to.py``.

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
        │   └── StandbyPassive         75  only a passive standby answered (a takeover, maybe)
        ├── StandbyConflict            75  a primary that served alone heard an active peer
        ├── DeliveryFailed             69  the broker reports a message's fate
        │   ├── Undeliverable          69  no live robot has that name
        │   ├── Nacked                 69  the receiver refused it (reason attached)
        │   ├── Busy                   75  the receiver has too much in flight
        │   └── DeliveryTimeout        75  the receiver never acked in time
        └── ReplyTimeout               75  acked (or not) but no reply before the deadline

    StopRun                             0  robot-to stops on a condition: not an error (AbortError)
"""

from __future__ import annotations

from robotlab.errors.bus import (
    BusError,
    Busy,
    DeliveryFailed,
    DeliveryTimeout,
    Nacked,
    PeerUnavailable,
    ProtocolError,
    ReplyTimeout,
    StandbyConflict,
    StandbyPassive,
    Undeliverable,
    delivery_error,
)
from robotlab.errors.robot import (
    AwaitTimeout,
    BoundaryError,
    BudgetExceeded,
    DelegationTimeout,
    InferenceError,
    MCPError,
    RemoteError,
    SandboxUnavailable,
    ToolError,
    ToolLoopError,
    ToolNotFoundError,
    retryable,
    retryable_classes,
)
from robotlab.errors.robot_to import (
    AbortError,
    CommitFailedError,
    PermanentError,
    QualityError,
    SetupError,
    StopRun,
    ToError,
)
from robotlab.errors.root import ConfigError, ConfigurationError, DependencyError, RobotlabError
from robotlab.exit_codes import ExitCode, RunExit

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
    "StandbyConflict",
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
