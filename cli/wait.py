"""``robotlab wait NAME...``: return once each named robot has a member on the bus.

For scripts that start a crew in the background: ``robotlab wait alice bob`` instead of a sleep
or a loop over ``robotlab ps``. It asks the broker what ``robotlab ps`` asks (its ``ps``), so a
robot counts once the broker has welcomed it, which is when robotd prints its ready line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

from robotlab import bus
from robotlab.errors import ConfigError, ExitCode, PeerUnavailable

from .errors import Command, exits_on_error
from .keys import client_keys, key_options

POLL_SECONDS = 0.1
"""Seconds between two looks at who is on the bus: a ps costs the broker microseconds."""


def _names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """Each name checked by the bus's name rule (a bad one is a usage error, exit 64), once each, in
    order."""
    try:
        return list(dict.fromkeys(bus.config.check_name(name) for name in value))
    except ConfigError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc


@click.command("wait", cls=Command)
@click.argument("names", nargs=-1, required=True, metavar="NAME...", callback=_names)
@click.option("--broker", "url", default=None,
              help="Broker address, or several comma-separated (default: $ROBOT_LAB_BROKER, else "
                   "tcp://127.0.0.1:5555).")
@click.option("--timeout", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="Seconds to wait for all of them, finding the broker included.")
@key_options
@exits_on_error
def wait_command(names: list[str], url: str | None, timeout: float, keys_folder: str | None,
                 key_file: str | None) -> None:
    """Wait until each robot NAME has a member on the bus, printing a line as each one arrives.

    Exit 0 when all are there, 64 bad usage, 69 no broker (or a key that may not ask for ps),
    75 time-out (one line naming the robots still missing), 130 Ctrl-C.
    """
    ends = time.monotonic() + timeout
    address = bus.broker_url(url)
    if address.startswith("inproc://"):
        raise ConfigError(f"{address} is an in-process address: give the broker's tcp:// or ipc:// "
                          "address")
    # A broker started in the same breath as this command may not listen yet: wait for it too.
    keys = client_keys(keys_folder, key_file)
    # Ctrl-C while joining the broker says the same as while looking: the bus sees this command
    # as soon as its HELLO is read, before connect returns here.
    try:
        with bus.connect(address, name="robotlab-wait", keys=keys,
                         timeout=max(timeout, 1.0)) as client:
            missing = wait_for(lambda: client.admin("ps"), names, ends, _arrived)
    except KeyboardInterrupt:
        click.echo(f"robotlab: interrupted; not on the bus: {', '.join(names)}", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    if missing:
        click.echo(f"robotlab: timed out after {timeout:g}s; not on the bus: {', '.join(missing)}",
                   err=True)
        sys.exit(ExitCode.TEMPFAIL)


def wait_for(ps: Callable[[], list[dict[str, Any]]], names: list[str], ends: float,
             arrived: Callable[[str, list[dict[str, Any]]], None]) -> list[str]:
    """Look at ``ps()`` until every name has a row or the monotonic clock passes ``ends``.

    ``arrived(name, rows)`` is called once per name as it first shows up; ``names`` keeps the
    ones still missing (a Ctrl-C's message names them). Returns the names still missing.
    """
    while True:
        try:
            rows = ps()
        except PeerUnavailable:
            rows = []  # no answer this time (a broker restarting): look again while time is left
        for name in list(names):
            mine = [row for row in rows if row.get("name") == name]
            if mine:
                names.remove(name)
                arrived(name, mine)
        if not names or time.monotonic() >= ends:
            return names
        time.sleep(min(POLL_SECONDS, max(ends - time.monotonic(), 0)))


def _arrived(name: str, rows: list[dict[str, Any]]) -> None:
    pids = ", ".join(str(row["pid"]) for row in rows if row.get("pid") is not None)
    click.echo(f"{name} is on the bus" + (f" (pid {pids})" if pids else ""))
