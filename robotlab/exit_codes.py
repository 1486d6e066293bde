"""The exit codes of robotlab's commands: two schemes, each code with one meaning.

:class:`ExitCode` (sysexits) is for ``robotlab``, ``robotd`` and the broker; :class:`RunExit`
(the spec's 0/1/2/130) is for ``robot-to``. Every error in ``robotlab.errors`` names its code
from one of them; docs/errors.md lists them all.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "RunExit"]


class ExitCode(IntEnum):
    """Exit codes of ``robotlab``, ``robotd`` and the broker (sysexits.h), one meaning each."""

    OK = 0
    USAGE = 64
    """A wrong command line or argument."""
    DATA = 65
    """Input that cannot be used as given (a payload that cannot cross a process boundary)."""
    UNAVAILABLE = 69
    """A peer that is not there: no broker, no such robot, a refused message."""
    SOFTWARE = 70
    """A failure inside robotlab or a tool: worth a bug report, not a retry."""
    TEMPFAIL = 75
    """Try again later: time-outs, a busy receiver, a used-up budget, a failed model call."""
    PROTOCOL = 76
    """Frames that do not parse."""
    CONFIG = 78
    """Configuration that can never work; systemd units do not restart on it."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT) ended a command before it was done (128 + the signal's number, as shells
    say)."""


class RunExit(IntEnum):
    """Exit codes of ``robot-to`` (spec: 0/1/2/130)."""

    STOPPED = 0
    """The run ended on one of its stop conditions."""
    ABORTED = 1
    """The run aborted: too many failures, a permanent or fatal error."""
    CANNOT_START = 2
    """The run could not start: bad settings, not a git repository, a dirty tree."""
    INTERRUPTED = 130
    """Ctrl-C or SIGTERM; the iteration in flight was rolled back."""
