"""``robotlab traffic``: the latest messages the broker routed, who to whom, of what type and
size (never their contents)."""

from __future__ import annotations

import time
from typing import Any

import click

from robotlab import bus

from .errors import Command, exits_on_error
from .keys import client_keys, key_options
from .output import print_rows

CONNECT_SECONDS = 5.0
"""How long the command looks for a broker that welcomes it."""
COLUMNS = ["seq", "time", "from", "to", "type", "bytes"]


@click.command("traffic", cls=Command)
@click.option("--last", type=click.IntRange(min=1, max=500), default=20, show_default=True,
              help="How many messages, oldest first (the broker keeps the last 500).")
@click.option("--broker", "url", default=None,
              help="Broker address, or several comma-separated (default: $ROBOT_LAB_BROKER, else "
                   "tcp://127.0.0.1:5555).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: seq, at (Unix time), from, to, type, bytes, reply.")
@key_options
@exits_on_error
def traffic_command(last: int, url: str | None, as_json: bool, keys_folder: str | None,
                    key_file: str | None) -> None:
    """List the latest messages the broker routed: who sent what type to whom, and its size.

    It reads the broker's `traffic` admin request (an admin key when the broker runs with
    --keys), as `robotlab web` does. Exit 0, 64 bad usage, 69 no broker, 130 Ctrl-C.
    """
    with bus.connect(bus.broker_url(url), name="robotlab-traffic",
                     keys=client_keys(keys_folder, key_file), timeout=CONNECT_SECONDS) as client:
        rows = client.admin("traffic", after=0, limit=last)["messages"]
    print_rows(rows if as_json else [_row(row) for row in rows], COLUMNS, as_json=as_json,
               empty="no messages routed since the broker started")


def _row(row: dict[str, Any]) -> dict[str, Any]:
    to = row["to"] if isinstance(row["to"], str) else str(row["to"])
    return {**row, "time": time.strftime("%H:%M:%S", time.localtime(row["at"])), "to": to,
            "type": f"{row['type']} (reply)" if row.get("reply") and row["type"] != "reply"
            else row["type"]}
