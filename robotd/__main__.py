"""``robotd``: host one robot (``--template``/``--system-prompt``) or any handler in this process.

A handler-only command line (``--name`` and ``--handler`` with the flags a handler uses) is
read without click, so a member that only runs a function never imports it (``flags.py`` says
why); every other one, ``--help`` and any usage error included, goes to the click command in
``command.py``.
"""

from __future__ import annotations

import sys
from typing import Any

from robotlab.cli.exits import ends_on_error, program_name
from robotlab.container_init import stay_as_init_if_pid1

from .flags import handler_flags
from .start import prepare, serve_handler


def main() -> None:
    """Run ``robotd`` with this process's command line."""
    stay_as_init_if_pid1()  # a container's first process: its handlers' orphans are its to reap
    flags = handler_flags(sys.argv[1:])
    if flags is None:
        from .command import robotd

        robotd()
    else:
        ends_on_error(_serve_handler, program_name)(dict(flags))


def _serve_handler(flags: dict[str, Any]) -> None:
    handler_path = flags.pop("handler_path")
    config, notifier = prepare(**flags)
    sys.exit(serve_handler(config, notifier, handler_path))


if __name__ == "__main__":
    main()
