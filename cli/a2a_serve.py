"""``robotlab a2a-serve``: each live robot as an A2A agent over HTTP (JSON-RPC), at
/robots/<name>/."""

from __future__ import annotations

import logging

import click

from robotlab import bus
from robotlab.service import LOG_FORMATS, configure_logging

from .errors import Command, checked, exits_on_error
from .keys import client_keys, key_options
from .mcp_serve import TIMEOUT, _bind, server_name


@click.command("a2a-serve", cls=Command)
@click.option("--broker", "url", default=None,
              help="Broker address, or several comma-separated (default: $ROBOT_LAB_BROKER, else "
                   "tcp://127.0.0.1:5555).")
@click.option("--http", "http", default="127.0.0.1:8766", show_default=True, metavar="HOST:PORT",
              callback=checked(_bind),
              help="Serve the agents at http://HOST:PORT/robots/<name>/ (port 0: any free port, "
                   "logged).")
@click.option("--insecure", is_flag=True,
              help="Allow a bind beyond loopback: anyone reaching it can ask every robot.")
@server_name("robotlab-a2a")
@click.option("--timeout", type=TIMEOUT, default=300.0, show_default=True,
              help="Seconds a task waits for the robot's reply before it fails.")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
              help="text for people, json for journald or Loki (one object a line); on stderr "
                   "either way.")
@key_options
@exits_on_error
def a2a_serve_command(url: str | None, http: str, insecure: bool, name: str, timeout: float,
                      log_level: str, log_format: str, keys_folder: str | None,
                      key_file: str | None) -> None:
    """Serve each live robot as an A2A agent: its card at
    /robots/<name>/.well-known/agent-card.json.

    Runs until SIGTERM or Ctrl-C: exit 0. Exit 64 bad usage, 69 no broker, 78 an address that
    cannot or may not be bound, or the a2a extra not installed.
    """
    from robotlab.errors import DependencyError
    from robotlab.interop import bind as binding

    try:
        from robotlab.interop import a2a_serve
    except ImportError as exc:  # the a2a extra is optional
        raise DependencyError(f"robotlab a2a-serve needs the a2a extra ({exc.name} is missing): "
                              "pip install 'robotlab[a2a]'") from exc
    from robotlab.interop.crew import Crew

    configure_logging(log_level, log_format)
    where = binding.parse_bind(http)
    binding.check_exposure(where, insecure, "A2A")
    sock = binding.listen(where)  # before joining the bus: a bad address costs nothing
    with bus.connect(bus.broker_url(url), name=name, keys=client_keys(keys_folder, key_file),
                     timeout=5.0) as client:
        log = logging.getLogger("robotlab.a2a")
        a2a_serve.serve(Crew(client, timeout), sock,
                        on_ready=lambda u: log.info("serving A2A agents at %s", u))
