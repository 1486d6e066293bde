"""``robotlab web``: the crew in a browser, live (members, dead letters with replay, traffic),
and with ``--human NAME`` a person's desk on the bus."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from robotlab import bus
from robotlab.interop import bind as binding
from robotlab.service import LOG_FORMATS, configure_logging

from .errors import Command, checked, exits_on_error
from .keys import client_keys, key_options

if TYPE_CHECKING:
    from robotlab.web.desk import WebDesk

SECONDS = click.FloatRange(min=0, min_open=True)
"""Seconds: more than zero."""


def _address(value: str) -> str:
    # checked: the rule's ConfigError becomes a usage error (64)
    return str(binding.parse_bind(value))


@contextlib.contextmanager
def _desk(address: str, person: str | None, keys_folder: str | None) -> Iterator[WebDesk | None]:
    """Her desk, joined as ``person`` (role human) with her own key, as ``robotlab human`` joins;
    None without ``--human``."""
    if person is None:
        yield None
        return
    from robotlab.web.desk import WebDesk

    with bus.BusClient(address, name=person, role="human",
                       keys=client_keys(keys_folder, None, person)) as client:
        desk = WebDesk(client)  # before joining: held mail arrives right after the welcome
        client.start(5.0)
        yield desk


@click.command("web", cls=Command)
@click.option("--bind", "where", default="127.0.0.1:8765", show_default=True, metavar="HOST:PORT",
              callback=checked(_address),
              help="Where the page is served (port 0: any free port, printed).")
@click.option("--broker", "url", default=None,
              help="Broker address, or several comma-separated (default: $ROBOT_LAB_BROKER, else "
                   "tcp://127.0.0.1:5555).")
@click.option("--access-key", "access_key", default=None, metavar="FILE",
              help="Answer only requests that carry the key in FILE (a browser opens /?key=KEY "
                   "once); with it, a bind beyond loopback is allowed.")
@click.option("--insecure", is_flag=True,
              help="Allow a bind beyond loopback with no key: anyone reaching it sees the crew "
                   "and can replay dead letters.")
@click.option("--name", default="robotlab-web", show_default=True,
              callback=checked(bus.config.check_name),
              help="This console's member name on the bus.")
@click.option("--human", "person", default=None, metavar="NAME",
              callback=checked(bus.config.check_name),
              help="Also join the bus as the person NAME (role human, her own key): the page "
                   "shows what arrives for her and answers her questions.")
@click.option("--interval", type=SECONDS, default=1.0, show_default=True,
              help="Seconds between looks at the crew (each browser gets only what changed).")
@click.option("--timeout", type=SECONDS, default=30.0, show_default=True,
              help="Seconds a replay waits for its receipt.")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
              help="text for people, json for journald or Loki (one object a line); on stderr.")
@key_options
@exits_on_error
def web_command(where: str, url: str | None, access_key: str | None, insecure: bool, name: str,
                person: str | None, interval: float, timeout: float, log_level: str,
                log_format: str, keys_folder: str | None, key_file: str | None) -> None:
    """Serve a live web console of the crew at http://HOST:PORT/ (default 127.0.0.1:8765).

    It reads the broker's admin requests (ps, dlq.list, stats), as `robotlab ps` and `dlq` do, so
    it needs an admin key when the broker runs with --keys. Runs until SIGTERM or Ctrl-C: exit 0.
    Exit 64 bad usage, 69 no broker, 78 an address that cannot or may not be bound, or an access
    key that cannot be read or is too short.
    """
    from robotlab.web.console import Console
    from robotlab.web.serve import serve

    if person == name:
        raise click.UsageError(f"--human {person} is the console's own --name: give her a name "
                               "of her own")
    from robotlab.web.access import read_key

    configure_logging(log_level, log_format)
    key = None if access_key is None else read_key(access_key)
    bound = binding.parse_bind(where)
    binding.check_exposure(bound, insecure or key is not None, "the web console", "--access-key")
    sock = binding.listen(bound)  # before joining the bus: a bad address costs nothing
    address = bus.broker_url(url)
    with bus.connect(address, name=name, keys=client_keys(keys_folder, key_file),
                     timeout=5.0) as client, _desk(address, person, keys_folder) as desk:
        log = logging.getLogger("robotlab.web")
        serve(Console(client, timeout, desk), interval, sock, key=key,
              on_ready=lambda u: log.info("serving the web console at %s", u))
