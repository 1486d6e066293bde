"""``robotlab keys``: make and list the CURVE keys of the bus, and the client options that use
them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from robotlab.bus import keys
from robotlab.bus.certificates import ROLE_ROBOT, ROLES
from robotlab.bus.config import keys_dir

from .errors import exits_on_error
from .output import print_rows

CLI_KEY = keys.CLIENT_KEY
"""The key the CLI's own commands use by default: ``KEYS/robotlab.key_secret``."""


def key_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--keys DIR`` and ``--key FILE`` to a command that connects to the broker."""
    func = click.option("--key", "key_file", default=None,
                        help="Secret key file of this client (default: "
                             f"DIR/{CLI_KEY}.key_secret).")(func)
    return click.option("--keys", "keys_folder", default=None,
                        help="CURVE keys folder (default: $ROBOT_LAB_KEYS); needed when the broker "
                             "runs with --keys.")(func)


def client_keys(keys_folder: str | None, key_file: str | None,
                name: str = CLI_KEY) -> keys.KeyConfig | None:
    """The KeyConfig the options ask for (:func:`robotlab.bus.keys.client_keys`), or None."""
    if key_file and keys_dir(keys_folder) is None:
        raise click.UsageError("--key needs --keys DIR (or $ROBOT_LAB_KEYS) for the broker's "
                               "public key")
    return keys.client_keys(name, keys_folder, key_file)


@click.group("keys")
def keys_group() -> None:
    """Make and list CURVE keys (see docs/broker.md, "Security")."""


@keys_group.command("new")
@click.argument("name")
@click.option("--dir", "folder", default=None,
              help="Keys folder (default: $ROBOT_LAB_KEYS, else ./keys).")
@click.option("--robot", "robots", multiple=True,
              help="A robot name this key may use (repeat it; '*' for any name, for CLI and admin "
                   "keys).")
@click.option("--role", "roles", multiple=True, type=click.Choice(ROLES),
              help="robot (the default: HELLO as its names and send) or admin (also ps, stats, "
                   "dlq); repeatable.")
@click.option("--no-authorize", is_flag=True, help="Do not copy the public key to DIR/authorized/.")
@exits_on_error
def keys_new_command(name: str, folder: str | None, robots: tuple[str, ...], roles: tuple[str, ...],
                     no_authorize: bool) -> None:
    """Write NAME.key and NAME.key_secret (mode 0600); `broker` makes the broker's own key."""
    if name != keys.BROKER_KEY and not robots:
        raise click.UsageError("say which robot names the key may use: --robot NAME (or --robot "
                               "'*')")
    grant = sorted({ROLE_ROBOT, *roles})
    public, secret = keys.new_key(keys_dir(folder) or "keys", name, list(robots),
                                  authorize=not no_authorize, roles=grant)
    click.echo(f"wrote {public} and {secret}")


@keys_group.command("list")
@click.option("--dir", "folder", default=None,
              help="Keys folder (default: $ROBOT_LAB_KEYS, else ./keys).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@exits_on_error
def keys_list_command(folder: str | None, as_json: bool) -> None:
    """List the keys in the folder (pairs, and authorized keys whose secret is on another host),
    the robot names each may use, and whether the broker accepts it."""
    rows = keys.list_keys(keys_dir(folder) or "keys")
    print_rows(rows, ["name", "robots", "roles", "authorized", "secret"], as_json=as_json,
               empty="no keys in this folder")
