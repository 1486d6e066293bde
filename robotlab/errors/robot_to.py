"""robot-to's errors, which exit in robot-to's own scheme (``RunExit``), and its stop signal."""

from __future__ import annotations

from robotlab.errors.root import RobotlabError
from robotlab.exit_codes import RunExit

__all__ = [
    "AbortError",
    "CommitFailedError",
    "PermanentError",
    "QualityError",
    "SetupError",
    "StopRun",
    "ToError",
]


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
