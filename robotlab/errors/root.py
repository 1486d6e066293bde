"""The root of robotlab's errors, and the configuration errors anything can raise."""

from __future__ import annotations

from robotlab.exit_codes import ExitCode

__all__ = ["ConfigError", "ConfigurationError", "DependencyError", "RobotlabError"]


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
