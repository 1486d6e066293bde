"""A handler-only robotd's command line, read without click.

Click and what it imports (gettext, uuid, datetime, its types and formatting) are about 2 MB
of each member's memory, and a crew may run hundreds of handler members. This reader takes
only what such a member is given: ``--name`` and ``--handler`` with the flags a handler uses,
each as ``--flag VALUE`` or ``--flag=VALUE``, with values click would accept. Anything else
(``--help``, ``--version``, a robot option, an unknown, repeated or malformed flag, a value
click would refuse) returns None, and the click command reads the line: its help, usage
errors and exit codes stay the only ones.
"""

from __future__ import annotations

from typing import Any

from robotlab.bus.config import check_name
from robotlab.errors import ConfigError
from robotlab.service import LOG_FORMATS

_KEYS = {"--name": "name", "--broker": "url", "--handler": "handler_path", "--instance": "instance",
         "--parent": "parent", "--keys": "keys_folder", "--key": "key_file",
         "--max-inflight": "max_inflight", "--connect-timeout": "connect_timeout",
         "--log-level": "log_level", "--log-format": "log_format"}
"""Flag -> the keyword it becomes (the click command's parameter names)."""

DEFAULTS: dict[str, Any] = {"url": None, "instance": None, "parent": None, "keys_folder": None,
                            "key_file": None, "max_inflight": 16, "connect_timeout": 0.0,
                            "log_level": "INFO", "log_format": "text"}
"""The click command's defaults for the same flags."""


def handler_flags(argv: list[str]) -> dict[str, Any] | None:
    """The keywords of a handler-only command line, or None for the click command to read it."""
    given = _pairs(argv)
    if given is None or "name" not in given or "handler_path" not in given:
        return None
    try:
        name = check_name(given["name"])
        max_inflight = int(given.get("max_inflight", DEFAULTS["max_inflight"]))
        connect_timeout = float(given.get("connect_timeout", DEFAULTS["connect_timeout"]))
    except (ConfigError, ValueError):
        return None
    log_format = given.get("log_format", "text")
    if max_inflight < 1 or connect_timeout < 0 or log_format not in LOG_FORMATS:
        return None
    return {**DEFAULTS, **given, "name": name, "max_inflight": max_inflight,
            "connect_timeout": connect_timeout}


def _pairs(argv: list[str]) -> dict[str, str] | None:
    """``{keyword: value}`` when every argument is a known flag with a value, each flag once."""
    given: dict[str, str] = {}
    args = iter(argv)
    for arg in args:
        flag, equals, value = arg.partition("=")
        key = _KEYS.get(flag)
        if key is None or key in given:
            return None
        if not equals:
            value = next(args, "")
        if not value or value.startswith("-"):
            return None
        given[key] = value
    return given
