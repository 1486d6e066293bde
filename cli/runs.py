"""``robotlab runs NAME``: a robot's recent runs, each with its prompt, tool calls, final words and
spending."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from robotlab import bus

from .errors import Command, checked, exits_on_error
from .keys import client_keys, key_options

CONNECT_SECONDS = 5.0
"""How long the command looks for a broker that welcomes it."""


@click.command("runs", cls=Command)
@click.argument("name", callback=checked(bus.config.check_name))
@click.option("--last", type=click.IntRange(min=1), default=5, show_default=True,
              help="How many runs, newest first.")
@click.option("--broker", "url", default=None,
              help="Broker address, or several comma-separated (default: $ROBOT_LAB_BROKER, else "
                   "tcp://127.0.0.1:5555).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True,
              help="Seconds to wait for the robot's answer (it answers between messages).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: a list of runs, newest first.")
@key_options
@exits_on_error
def runs_command(name: str, last: int, url: str | None, timeout: float, as_json: bool,
                 keys_folder: str | None, key_file: str | None) -> None:
    """Show the recent runs of the robot NAME: prompt, tool calls, final words, tokens, dollars,
    seconds.

    A robot hosted by robotd keeps its last 20 runs since it started. Exit 0 shown, 64 bad
    usage, 69 no broker, no robot of that name, or one that keeps no record of its runs,
    75 the robot did not answer within --timeout, 130 Ctrl-C.
    """
    from robotlab.robot.recent_runs import ask_runs

    with bus.connect(bus.broker_url(url), name="robotlab-runs",
                     keys=client_keys(keys_folder, key_file), timeout=CONNECT_SECONDS) as client:
        runs = ask_runs(client, name, last, timeout)
    if as_json:
        click.echo(json.dumps(runs, indent=2))
    elif not runs:
        click.echo(f"{name} has not run since its robotd started", err=True)
    else:
        click.echo("\n\n".join(describe(run) for run in runs))


def describe(run: dict[str, Any]) -> str:
    """One run for people: a head line, then its prompt, each tool call and its final words."""
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["started"]))
    seconds = "running" if run["seconds"] is None else f"{run['seconds']:.1f}s"
    cost = run["cost"] if isinstance(run["cost"], str) else f"${run['cost']:.4f}"
    lines = [f"{started}  {run['status']}  {seconds}  {run['tokens_in']:,} in / "
             f"{run['tokens_out']:,} out tokens  {cost}", f"  prompt: {run['prompt']}"]
    lines += [f"  tool {call['name']}({call['arguments']}) -> {call['result']}"
              for call in run["tool_calls"]]
    if run["error"]:
        lines.append(f"  error: {run['error']}")
    elif run["reply"] is not None:
        lines.append(f"  reply: {run['reply']}")
    return "\n".join(lines)
