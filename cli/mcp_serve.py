"""``robotlab mcp-serve``: the crew as MCP tools (``ask_<name>``), over stdio or streamable HTTP."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import click

from robotlab import bus
from robotlab.service import LOG_FORMATS, configure_logging

from .errors import Command, checked, exits_on_error
from .keys import client_keys, key_options

TIMEOUT = click.FloatRange(min=0, min_open=True)
"""Seconds: more than zero."""


def _bind(value: str) -> str:
    from robotlab.interop.bind import parse_bind

    return str(parse_bind(value))


def server_name(default: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--name`` option of a server that joins the bus as one member (MCP, A2A)."""
    return click.option("--name", default=default, show_default=True,
                        callback=checked(bus.config.check_name),
                        help="This server's member name on the bus.")


@click.command("mcp-serve", cls=Command)
@click.option("--broker", "url", default=None,
              help="Broker address, or several comma-separated (default: $ROBOT_LAB_BROKER, else "
                   "tcp://127.0.0.1:5555).")
@click.option("--http", "http", default=None, metavar="HOST:PORT", callback=checked(_bind),
              help="Serve streamable HTTP at http://HOST:PORT/mcp (port 0: any free port, printed) "
                   "instead of stdio.")
@click.option("--insecure", is_flag=True,
              help="Allow an --http bind beyond loopback: anyone reaching it can ask every robot.")
@server_name("robotlab-mcp")
@click.option("--timeout", type=TIMEOUT, default=300.0, show_default=True,
              help="Seconds a call waits for the robot's reply.")
@click.option("--interval", type=TIMEOUT, default=1.0, show_default=True,
              help="Seconds between looks at who is on the bus (the tool list follows).")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
              help="text for people, json for journald or Loki (one object a line); on stderr "
                   "either way.")
@key_options
@exits_on_error
def mcp_serve_command(url: str | None, http: str | None, insecure: bool, name: str, timeout: float,
                      interval: float, log_level: str, log_format: str, keys_folder: str | None,
                      key_file: str | None) -> None:
    """Serve each live robot as an MCP tool ask_<name>(message), on stdio (default) or --http.

    Runs until the client closes stdin (stdio), SIGTERM or Ctrl-C: exit 0. Exit 64 bad usage,
    69 no broker, 78 an --http address that cannot or may not be bound.
    """
    from robotlab.interop import bind as binding
    from robotlab.interop import mcp_serve
    from robotlab.interop.crew import Crew

    configure_logging(log_level, log_format)  # stderr: on stdio, stdout is the protocol's
    sock = None
    if http is not None:
        where = binding.parse_bind(http)
        binding.check_exposure(where, insecure, "MCP")
        sock = binding.listen(where)  # before joining the bus: a bad address costs nothing
    elif insecure:
        raise click.UsageError("--insecure is for --http HOST:PORT; stdio serves only the process "
                               "that started it")
    address = bus.broker_url(url)
    with bus.connect(address, name=name, keys=client_keys(keys_folder, key_file),
                     timeout=5.0) as client:
        crew = Crew(client, timeout)
        if sock is None:
            mcp_serve.serve_stdio(crew, interval)
        else:
            log = logging.getLogger("robotlab.mcp")
            mcp_serve.serve_http(crew, interval, sock, where.host,
                                 on_ready=lambda u: log.info("serving MCP at %s", u))
