"""``robotlab``: run a broker, and talk to one (ps, send, dlq). Thin shells over robotlab.bus."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

import click

from robotlab import bus
from robotlab.bus.config import BrokerConfig
from robotlab.bus.member.admin_calls import dead_letters
from robotlab.bus.wire.protocol import unpack
from robotlab.container_init import stay_as_init_if_pid1
from robotlab.errors import ConfigError, ExitCode
from robotlab.observability import setup as setup_tracing
from robotlab.observability import trace_settings
from robotlab.service import LOG_FORMATS, Notifier, configure_logging, service_environment

from .a2a_serve import a2a_serve_command
from .errors import Group, checked, exits_on_error
from .human import human_command
from .keys import client_keys, key_options, keys_group
from .mcp_serve import mcp_serve_command
from .output import print_rows
from .ps_view import COLUMNS, table_row, with_figures
from .runs import runs_command
from .traffic import traffic_command
from .wait import wait_command
from .web import web_command

BROKER_HELP = ("Broker address, or several comma-separated (a primary and its standby) "
               "(default: $ROBOT_LAB_BROKER, else tcp://127.0.0.1:5555).")


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="robotlab")
def main() -> None:
    """robotlab: LLM robots, each in its own process, on a ZeroMQ bus."""
    stay_as_init_if_pid1()  # a container's first process (the broker, most often)


main.add_command(a2a_serve_command)
main.add_command(human_command)
main.add_command(keys_group)
main.add_command(mcp_serve_command)
main.add_command(runs_command)
main.add_command(traffic_command)
main.add_command(wait_command)
main.add_command(web_command)


TIMEOUT = click.FloatRange(min=0)
"""Seconds to wait: never negative."""
CONNECT_SECONDS = 5.0
"""How long a command looks for a broker that welcomes it (send: its --timeout, if longer)."""
MIN_LEFT = 0.1
"""Seconds a send still waits for its receipt or reply when finding the broker took its whole
time-out."""


def _connect(url: str | None, name: str, keys_folder: str | None, key_file: str | None,
             timeout: float = CONNECT_SECONDS) -> bus.BusClient:
    address = bus.broker_url(url)
    if address.startswith("inproc://"):
        # An inproc broker lives inside one process; a new command could only wait for it in vain.
        raise ConfigError(f"{address} is an in-process address: give the broker's tcp:// or ipc:// "
                          "address")
    return bus.connect(address, name=name, keys=client_keys(keys_folder, key_file), timeout=timeout)


@main.command("broker")
@click.option("--bind", default=None,
              help="Endpoint to listen on (tcp://, ipc://). Default tcp://127.0.0.1:5555.")
@click.option("--heartbeat", type=float, default=1.0, show_default=True,
              help="Seconds between heartbeats.")
@click.option("--liveness", type=int, default=3, show_default=True,
              help="Heartbeats a robot may miss.")
@click.option("--ack-timeout", type=float, default=30.0, show_default=True,
              help="Seconds a delivery may stay unacked.")
@click.option("--max-handling", type=float, default=3600.0, show_default=True,
              help="Seconds a delivery may stay in flight even while its receiver touches it.")
@click.option("--max-message-bytes", type=int, default=16 * 1024 * 1024, show_default=True)
@click.option("--max-inflight", type=int, default=64, show_default=True,
              help="Unacked deliveries per robot before 'busy'.")
@click.option("--insecure", is_flag=True, help="Allow a non-loopback bind without CURVE keys.")
@click.option("--keys", "keys_folder", default=None,
              help="CURVE keys folder: DIR/broker.key_secret, clients in DIR/authorized/ (default: "
                   "$ROBOT_LAB_KEYS).")
@click.option("--journal", "journal", default=None, metavar="PATH",
              help="SQLite journal of unsettled messages, dead letters and robot names "
                   "(default: $STATE_DIRECTORY/broker.db under systemd, else one per bind address "
                   "in "
                   "$XDG_STATE_HOME/robotlab or ~/.local/state/robotlab: "
                   "broker-tcp-127.0.0.1-5555.db).")
@click.option("--no-journal", is_flag=True,
              help="Keep everything in memory only: a restart loses it.")
@click.option("--journal-max-bytes", type=int, default=256 * 1024 * 1024, show_default=True,
              help="Message bytes the journal may hold before new sends get 'busy'.")
@click.option("--dlq-max-bytes", type=click.IntRange(min=1), default=None,
              help="Bytes dead letters may hold before the oldest are evicted (default: half of "
                   "--journal-max-bytes, or 64 MiB with --no-journal).")
@click.option("--hold", type=float, default=30.0, show_default=True,
              help="Seconds messages for a known robot, and a silent robot's deliveries, wait for "
                   "it to come back.")
@click.option("--standby", type=click.Choice(["primary", "backup"]), default=None,
              help="Run as one of a Binary Star pair; needs --state-bind and --peer.")
@click.option("--state-bind", default=None, metavar="URL",
              help="Where this broker publishes its state to its peer.")
@click.option("--peer", default=None, metavar="URL",
              help="Where the peer broker publishes its state (its --state-bind).")
@click.option("--standby-sync", type=click.Choice(["on", "off"]), default="on", show_default=True,
              help="on: a receipt waits until the peer holds the journal's record; off: faster, a "
                   "failover may lose the last commits.")
@click.option("--key", "key_file", default=None,
              help="The broker's secret key file (default: DIR/broker.key_secret, or "
                   "$ROBOT_LAB_KEY).")
@click.option("--bind-timeout", type=click.FloatRange(min=0), default=60.0, show_default=True,
              help="Seconds to wait for a bind address that does not exist yet, then exit 75.")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
              help="text for people, json for journald or Loki (one object a line).")
@exits_on_error
def broker_command(bind: str | None, heartbeat: float, liveness: int, ack_timeout: float,
                   max_handling: float, max_message_bytes: int, max_inflight: int, insecure: bool,
                   keys_folder: str | None, journal: str | None, no_journal: bool,
                   journal_max_bytes: int, dlq_max_bytes: int | None, hold: float,
                   standby: str | None,
                   state_bind: str | None, peer: str | None, standby_sync: str,
                   key_file: str | None, bind_timeout: float, log_level: str,
                   log_format: str) -> None:
    """Run the broker until SIGTERM or Ctrl-C."""
    from robotlab.broker.serve import serve

    configure_logging(log_level, log_format)
    bind = bind or bus.config.DEFAULT_URL
    config = BrokerConfig(
        bind=bind, heartbeat=heartbeat, liveness=liveness, ack_timeout=ack_timeout,
        max_handling=max_handling, max_message_bytes=max_message_bytes, max_inflight=max_inflight,
        insecure=insecure, keys_dir=bus.config.keys_dir(keys_folder),
        key_file=bus.config.key_file(key_file), bind_timeout=bind_timeout,
        journal=None if no_journal else journal or _default_journal(bind),
        journal_max_bytes=journal_max_bytes, dlq_max_bytes=dlq_max_bytes, hold=hold,
        standby=standby, state_bind=state_bind,
        peer=peer, standby_sync=standby_sync == "on",
    )
    setup_tracing(trace_settings(), "robotlab-broker")  # off unless OTEL_* names an exporter
    notifier = Notifier(service_environment())
    sys.exit(serve(config, on_ready=lambda url: notifier.ready(f"listening on {url}"),
                   on_tick=notifier.tick))


def _default_journal(bind: str) -> str:
    """The broker's default journal, saying so when the one all brokers once shared is still
    there."""
    path = bus.config.default_journal(bind)
    legacy = bus.config.shared_journal()
    if legacy is not None and not os.path.exists(path):
        logging.getLogger("robotlab.broker").warning(
            "journal: %s is the journal all brokers shared before each got its own; this broker "
            "uses %s. To take back what the old one holds, start it once with --journal %s",
            legacy, path, legacy)
    return path


@main.command("ps")
@click.option("--broker", "url", default=None, help=BROKER_HELP)
@click.option("--all", "show_all", is_flag=True, help="Include clients, not only robots.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@key_options
@exits_on_error
def ps_command(url: str | None, show_all: bool, as_json: bool, keys_folder: str | None,
               key_file: str | None) -> None:
    """List live robots: in flight and the age of the oldest, tokens and dollars since start,
    status."""
    with _connect(url, "robotlab-ps", keys_folder, key_file) as client:
        rows = client.admin("ps", all=show_all)
    shown = [with_figures(r) for r in rows] if as_json else [table_row(r) for r in rows]
    print_rows(shown, COLUMNS, as_json=as_json, empty="no robots on the bus")


@main.command("top")
@click.option("--broker", "url", default=None, help=BROKER_HELP)
@click.option("--all", "show_all", is_flag=True, help="Include clients, not only robots.")
@click.option("--interval", type=click.FloatRange(min=0.1), default=1.0, show_default=True,
              help="Seconds between refreshes.")
@click.option("--once", is_flag=True, help="Print the view once and exit.")
@key_options
@exits_on_error
def top_command(url: str | None, show_all: bool, interval: float, once: bool,
                keys_folder: str | None, key_file: str | None) -> None:
    """The ps view, live: redrawn every interval on a terminal, printed each interval elsewhere.
    Ctrl-C quits (exit 0)."""
    from .top import run

    with _connect(url, "robotlab-top", keys_folder, key_file) as client:
        run(lambda: client.admin("ps", all=show_all), client.url, interval, once)


@main.command("send")
@click.option("--to", "to", required=True, callback=checked(bus.config.check_name),
              help="Robot name to send to.")
@click.option("--broker", "url", default=None, help=BROKER_HELP)
@click.option("--any", "any_", is_flag=True,
              help="Deliver to one instance instead of every instance.")
@click.option("--wait", is_flag=True, help="Wait for the reply and print it.")
@click.option("--timeout", type=TIMEOUT, default=30.0, show_default=True, help="Seconds to wait.")
@click.option("--json-content", "json_content", is_flag=True,
              help="CONTENT is JSON (sent as data, not text).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: the reply, or where it was delivered.")
@click.option("--type", "type_", default=None, metavar="TYPE",
              help="Message type, e.g. robot.run to run a served robot with options (default: "
                   "request with --wait, else message).")
@click.argument("content")
@key_options
@exits_on_error
def send_command(to: str, url: str | None, any_: bool, wait: bool, timeout: float,
                 json_content: bool, as_json: bool, type_: str | None, content: str,
                 keys_folder: str | None, key_file: str | None) -> None:
    """Send CONTENT to a robot. Exit 0 delivered (or replied), 64 bad usage, 69 undeliverable, 75
    timeout, 130 Ctrl-C."""
    payload: Any = _parse_content(content) if json_content else content
    setup_tracing(trace_settings(), "robotlab-send")  # off unless OTEL_* names an exporter
    # The send's time-out bounds the whole command, finding the broker included (never less than
    # CONNECT_SECONDS for that): a standby pair in the middle of a takeover is waited for, not
    # reported unreachable.
    ends = time.monotonic() + timeout
    with _connect(url, "robotlab-send", keys_folder, key_file,
                  timeout=max(timeout, CONNECT_SECONDS)) as client:
        timeout = max(ends - time.monotonic(), MIN_LEFT)
        if wait:
            reply = _wait_for_reply(client, to, payload, timeout, any_=any_,
                                    type_=type_ or "request")
            if as_json:
                click.echo(json.dumps({"from": reply.sender, "content": reply.content},
                                      default=str))
            else:
                click.echo(reply.content if isinstance(reply.content, str)
                           else json.dumps(reply.content))
            return
        tracker = client.send(to, payload, any=any_, type=type_ or "message").wait(timeout)
    if as_json:
        click.echo(json.dumps({"delivered_to": list(tracker.instances)}))
    else:
        click.echo(f"delivered to {', '.join(tracker.instances) or to}", err=True)


def _wait_for_reply(client: bus.BusClient, to: str, payload: Any, timeout: float, *, any_: bool,
                    type_: str) -> bus.Message:
    """Send a request and wait for its reply. Ctrl-C leaves the bus at once (a BYE: the broker
    then drops the reply when it comes, rather than dead-lettering it) and exits 130 saying so."""
    deadline = time.time() + timeout
    tracker = client.send_request(to, payload, any=any_, type=type_, deadline=deadline)
    try:
        return tracker.reply(timeout, deadline=deadline)  # refused past it: exit 75, as a time-out
    except KeyboardInterrupt:
        client.close()
        click.echo(f"robotlab: interrupted; message {tracker.id} to {to} was sent and may still "
                   "run, but nobody waits for its reply now: the broker drops it (no dead "
                   "letter)", err=True)
        sys.exit(ExitCode.INTERRUPTED)


@main.group("dlq")
def dlq_group() -> None:
    """Inspect and replay dead letters."""


@dlq_group.command("list")
@click.option("--broker", "url", default=None, help=BROKER_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@key_options
@exits_on_error
def dlq_list_command(url: str | None, as_json: bool, keys_folder: str | None,
                     key_file: str | None) -> None:
    """List dead letters, oldest first."""
    with _connect(url, "robotlab-dlq", keys_folder, key_file) as client:
        rows = list(dead_letters(client))
    for row in rows:
        row["content"] = _decode(row.pop("body", b""), row.pop("body_bytes", 0))
    columns = ["dlq_id", "reason", "maybe_ran", "to", "from", "type", "detail", "content"]
    print_rows(rows, columns, as_json=as_json, empty="the dead-letter queue is empty")


@dlq_group.command("replay")
@click.argument("dlq_id")
@click.option("--broker", "url", default=None, help=BROKER_HELP)
@click.option("--timeout", type=TIMEOUT, default=30.0, show_default=True, help="Seconds to wait.")
@click.option("--force", is_flag=True,
              help="Replay a letter whose work may have run (MAYBE_RAN): it may run twice.")
@key_options
@exits_on_error
def dlq_replay_command(dlq_id: str, url: str | None, timeout: float, force: bool,
                       keys_folder: str | None, key_file: str | None) -> None:
    """Route a dead letter again; exit as `send` does with its outcome."""
    with _connect(url, "robotlab-dlq", keys_folder, key_file) as client:
        tracker = client.replay(dlq_id, force=force).wait(timeout)
    click.echo(f"{dlq_id} delivered to {', '.join(tracker.instances) or tracker.to}")


@dlq_group.command("purge")
@click.argument("dlq_id", required=False)
@click.option("--all", "purge_all", is_flag=True, help="Purge every dead letter.")
@click.option("--broker", "url", default=None, help=BROKER_HELP)
@key_options
@exits_on_error
def dlq_purge_command(dlq_id: str | None, purge_all: bool, url: str | None, keys_folder: str | None,
                      key_file: str | None) -> None:
    """Drop one dead letter, or all of them with --all."""
    if not dlq_id and not purge_all:
        raise click.UsageError("name a DLQ_ID, or pass --all")
    with _connect(url, "robotlab-dlq", keys_folder, key_file) as client:
        result = client.admin("dlq.purge", dlq_id=dlq_id)  # None: every dead letter
    click.echo(f"purged {result['purged']}")


def _parse_content(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="CONTENT") from exc


def _decode(body: bytes | None, size: int) -> Any:
    """A listed dead letter's content: its body decoded, or what stands in for it."""
    if body is None:
        return f"<{size} bytes, too large to list>"
    try:
        return unpack(body) if body else None
    except Exception:
        return f"<{len(body)} undecodable bytes>"
