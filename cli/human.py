"""``robotlab human --name NAME``: a person joins the bus, sees what arrives and answers by
typing."""

from __future__ import annotations

import sys
import threading

import click

from robotlab import bus

from .errors import Command, checked, exits_on_error
from .keys import client_keys, key_options

CONNECT_SECONDS = 5.0
"""How long she waits for a broker that welcomes her."""


@click.command("human", cls=Command)
@click.option("--name", required=True, callback=checked(bus.config.check_name),
              help="Your member name on the bus: robots ask you by it.")
@click.option("--broker", "url", default=None,
              help="Broker address, or several comma-separated (default: $ROBOT_LAB_BROKER, else "
                   "tcp://127.0.0.1:5555).")
@key_options
@exits_on_error
def human_command(name: str, url: str | None, keys_folder: str | None,
                  key_file: str | None) -> None:
    """Join the bus as NAME (role human): show every message that arrives, and answer by typing.

    Type `help` for the commands; a plain line answers the newest open question. Exit 0 on
    `quit` or end of input, 64 bad usage, 69 no broker, 78 a name the key may not use,
    130 Ctrl-C.
    """
    from robotlab.interop.human_desk import HumanDesk

    lock = threading.Lock()  # arrivals are shown from the bus's thread, answers from this one

    def show(line: str) -> None:
        with lock:
            click.echo(line)

    address = bus.broker_url(url)
    with bus.BusClient(address, name=name, role="human",
                       keys=client_keys(keys_folder, key_file, name)) as client:
        desk = HumanDesk(client, show)  # before joining: held mail arrives right after the welcome
        client.start(CONNECT_SECONDS)
        show(f"{name} is on the bus at {address}; type help for the commands")
        for line in sys.stdin:
            if not desk.handle(line):
                break
