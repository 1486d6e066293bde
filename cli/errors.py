"""The one place CLI commands turn robotlab errors into a one-line message and an exit code."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from robotlab.errors import RobotlabError

F = TypeVar("F", bound=Callable[..., Any])


def exits_on_error(func: F) -> F:
    """Run a command; a RobotlabError prints ``<prog>: <message>`` on stderr and exits with its code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RobotlabError as exc:
            print(f"{_prog()}: {exc}", file=sys.stderr)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


def _prog() -> str:
    import click

    ctx = click.get_current_context(silent=True)
    return (ctx.find_root().info_name if ctx is not None else None) or "robotlab"
