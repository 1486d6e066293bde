"""The one place CLI commands turn robotlab errors into a one-line message and an exit code.

Click's own usage errors (a missing argument, a bad option value) exit 2 by default; the
``Group`` and ``Command`` classes here make them exit 64 (``ExitCode.USAGE``), the code
docs/errors.md gives them, and :func:`exits_on_error` turns Ctrl-C into one line and 130.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from robotlab.errors import ConfigError, ExitCode

from .exits import ends_on_error

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def exits_on_error(func: F) -> F:
    """Run a command; a RobotlabError prints ``<prog>: <message>`` on stderr and exits with its
    code.

    Ctrl-C prints ``<prog>: interrupted`` and exits 130 (click would print "Aborted!" and exit 1).
    """
    return ends_on_error(func, _prog)


def checked(check: Callable[[str], str]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback that runs ``check`` (a ``ConfigError``-raising rule, such as the robot
    name rule) on an option's value, so a bad value is a usage error: one line, exit 64."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return value
        try:
            return check(value)
        except ConfigError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc

    return callback


class _UsageError(click.UsageError):
    exit_code = ExitCode.USAGE


def _usage_exit(call: Callable[[], T]) -> T:
    try:
        return call()
    except _UsageError:
        raise
    # click's words (a BadParameter's "Invalid value for ..."), our code
    except click.UsageError as exc:
        raise _UsageError(exc.format_message(), exc.ctx) from exc


class Group(click.Group):
    """A click group whose usage errors, its subcommands' included, exit 64 instead of 2."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        return _usage_exit(lambda: super(Group, self).make_context(*args, **kwargs))

    def invoke(self, ctx: click.Context) -> Any:
        return _usage_exit(lambda: super(Group, self).invoke(ctx))


class Command(click.Command):
    """A click command whose usage errors exit 64 instead of 2."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        return _usage_exit(lambda: super(Command, self).make_context(*args, **kwargs))

    def invoke(self, ctx: click.Context) -> Any:
        return _usage_exit(lambda: super(Command, self).invoke(ctx))


def _prog() -> str:
    ctx = click.get_current_context(silent=True)
    return (ctx.find_root().info_name if ctx is not None else None) or "robotlab"
