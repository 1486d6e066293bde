"""How a command ends on an error: one line on stderr (``<prog>: <message>``) and the error's exit
code.

Click-free, so that a command line read without click (a handler-only ``robotd``) ends the
same way as a click command; :func:`robotlab.cli.errors.exits_on_error` names the program
from click's context.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from robotlab.errors import ExitCode, RobotlabError
from robotlab.service.logs import logs_json

F = TypeVar("F", bound=Callable[..., Any])


def ends_on_error(func: F, prog: Callable[[], str]) -> F:
    """Run ``func``; a RobotlabError prints ``<prog()>: <message>`` on stderr and exits with its
    code.

    Ctrl-C prints ``<prog()>: interrupted`` and exits 130 (click would print "Aborted!" and exit 1).
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RobotlabError as exc:
            _last_line(f"{prog()}: {exc}")
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            _last_line(f"{prog()}: interrupted")
            sys.exit(ExitCode.INTERRUPTED)

    return wrapper  # type: ignore[return-value]


def _last_line(line: str) -> None:
    """The line a command ends on, on stderr: a JSON log line under ``--log-format json``."""
    if logs_json():
        logging.getLogger("robotlab").error("%s", line)
    else:
        print(line, file=sys.stderr)


def program_name() -> str:
    """What click calls this program in its messages: the script's name (``robotd``), or
    ``python -m robotlab.robotd`` when run with ``-m``."""
    package = getattr(sys.modules["__main__"], "__package__", None)
    script = os.path.basename(sys.argv[0])
    if not package:
        return script
    name = os.path.splitext(script)[0]
    return f"python -m {package if name == '__main__' else f'{package}.{name}'}"
