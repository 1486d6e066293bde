"""``robot-to``: a thin shell over ``robotlab.to.run`` / ``resume`` and the decisions listing.

Usage::

    robot-to [objective] [options]
    robot-to --resume RUN_ID [options]
    robot-to decisions [RUN_ID]
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from robotlab.container_init import stay_as_init_if_pid1

USAGE = """robot-to [objective] [options]
robot-to --resume RUN_ID [options]
robot-to decisions [RUN_ID]"""
_FLAGS_ON = {"local_guards": "local_guards", "debug": "debug"}
_FLAGS_OFF = {"no_stream": "stream", "no_decisions": "decisions_enabled",
              "no_preflight": "preflight"}


def _settings(options: dict[str, Any]) -> dict[str, Any]:
    """Flags as settings; a flag not given is left out so lower layers apply."""
    settings = {key: value for key, value in options.items() if value not in (None, ())}
    for flag, key in _FLAGS_ON.items():
        settings.pop(flag, None)
        if options.get(flag):
            settings[key] = True
    for flag, key in _FLAGS_OFF.items():
        settings.pop(flag, None)
        if options.get(flag):
            settings[key] = False
    if options.get("protect_paths"):
        settings["protect_paths"] = list(options["protect_paths"])
    if options.get("crew"):
        settings["crew"] = [name.strip() for name in options["crew"].split(",") if name.strip()]
    return settings


def _objective(words: tuple[str, ...]) -> str:
    if words:
        return words[0].strip()
    if not sys.stdin.isatty():
        return sys.stdin.read().strip()
    return ""


@contextlib.contextmanager
def _starting(quiet: bool) -> Iterator[None]:
    """The first line, written before robot-to's own modules load (and, on a terminal, a rich
    spinner while they do; the model client comes later, under the run's own spinner)."""
    if quiet:
        yield
        return
    click.echo("robot-to: starting…", err=True)
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.live import Live
    from rich.spinner import Spinner

    live = Live(Spinner("dots", text="robot-to: loading…"), console=Console(file=sys.stderr),
                transient=True, refresh_per_second=12.5)
    live.start(refresh=True)  # drawn now, not at the first tick of rich's refresh thread
    try:
        yield
    finally:
        live.stop()


opt = click.option
INT, FLOAT = click.IntRange(min=0), click.FloatRange(min=0)


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help="\b\n" + USAGE + "\n\nRun an autonomous loop toward OBJECTIVE on a new git branch.",
    options_metavar="[options]",
)
@click.argument("words", nargs=-1, metavar="[OBJECTIVE]")
@opt("--provider", metavar="NAME", help="LLM provider (openai, anthropic, ollama...).")
@opt("--model", metavar="MODEL", help="Model identifier for the provider.")
@opt("--api-base", metavar="URL",
     help="OpenAI-compatible server URL (Ollama, vLLM...); OPENAI_API_BASE works too.")
@opt("--max-iterations", type=INT, metavar="N", help="Stop after N iterations.")
@opt("--max-tokens", type=INT, metavar="N", help="Stop after N total tokens.")
@opt("--max-cost", type=FLOAT, metavar="USD",
     help="Stop once the run has spent USD dollars (litellm's prices).")
@opt("--max-output-tokens", type=INT, metavar="N",
     help="Longest reply a model call may write (default 8192; 0: the provider's).")
@opt("--stop-when", metavar="CONDITION",
     help="Natural-language stop condition the robot evaluates.")
@opt("--max-consecutive-failures", type=INT, metavar="N",
     help="Abort after N consecutive failures (default 3).")
@opt("--verify-command", "--verify", "verify_command", metavar="CMD",
     help="Command that must pass before a commit.")
@opt("--verify-timeout", type=FLOAT, metavar="SECONDS",
     help="Timeout for verify/measure/floor (default 600).")
@opt("--max-verify-repairs", type=INT, metavar="N",
     help="Repair-in-place attempts before rollback (default 2).")
@opt("--call-timeout", type=FLOAT, metavar="SECONDS",
     help="One deadline for a model call, its retries and every streamed chunk (default 300; 0: "
          "sized from --max-output-tokens and the measured token rate).")
@opt("--iteration-timeout", type=FLOAT, metavar="SECONDS",
     help="Kill an iteration's robot after SECONDS.")
@opt("--eval", "eval", type=click.Choice(["code", "null", "prose"]), help="Eval strategy.")
@opt("--measure", "eval_measure", metavar="CMD",
     help="Command printing a number on stdout (higher is better).")
@opt("--target", "eval_target", type=float, metavar="FLOAT",
     help="Stop once the measured score reaches this.")
@opt("--spec", "eval_spec", metavar="PATH", help="Spec the prose judge measures against (locked).")
@opt("--floor", "eval_floor", metavar="CMD",
     help="Check that must pass before the prose judge is asked.")
@opt("--judge-model", "eval_judge_model", metavar="MODEL",
     help="Model of the prose judge (default --model).")
@opt("--crew", metavar="NAME,...",
     help="With --broker: give the robot an ask_crew tool to ask these served robots.")
@opt("--ask", metavar="NAME",
     help="With --broker: send each decision to the person NAME (robotlab human); her answer "
          "resolves it.")
@opt("--judge-robot", metavar="NAME",
     help="A robot served on the bus (--broker) is the prose judge.")
@opt("--stop-on-plateau", type=INT, metavar="N",
     help="Stop after N iterations without improvement.")
@opt("--require-improvement/--no-require-improvement", default=None,
     help="Roll back changes that do not beat the parent.")
@opt("--protect-path", "protect_paths", multiple=True, metavar="GLOB",
     help="Lock a grader file (repeatable).")
@opt("--commit-format", type=click.Choice(["default", "conventional"]),
     help="Commit message format.")
@opt("--run-dir", metavar="PATH", help="Directory for run state (default .robot_lab_to).")
@opt("--local-guards", is_flag=True, help="Add the read/write/edit/bash tools and the guardrails.")
@opt("--edit-format", type=click.Choice(["tools", "whole"]),
     help="How the robot changes files: tool calls (default), or whole files in its reply, judged "
          "by --verify-command (for very small models).")
@opt("--no-stream", is_flag=True, help="Disable streaming (needed for Ollama tool calls).")
@opt("--debug", is_flag=True, help="Keep provider logging and echo the JSONL events to stderr.")
@opt("--no-decisions", is_flag=True, help="Do not give the robot the request_decision tool.")
@opt("--decision-mode", type=click.Choice(["wait", "exit"]),
     help="On a blocking decision: wait, or exit to resume later.")
@opt("--decision-poll", "decision_wait_poll", type=FLOAT, metavar="SECONDS",
     help="Seconds between checks while waiting.")
@opt("--decision-timeout", type=FLOAT, metavar="SECONDS",
     help="Give up waiting for a decision after SECONDS.")
@opt("--no-preflight", is_flag=True,
     help="Skip the credentials check and the one model call made before the branch.")
@opt("--preflight-timeout", type=FLOAT, metavar="SECONDS",
     help="Time-out of the preflight model call (default 20).")
@opt("--json", "summary_json", is_flag=True, help="Print the exit summary as one JSON object.")
@opt("--quiet", "-q", is_flag=True,
     help="Print only the exit summary (no progress lines, no live view).")
@opt("--broker", metavar="URL",
     help="Join the crew's bus at URL (ROBOT_LAB_BROKER works too): answer status and decisions.")
@opt("--resume", "resume_id", metavar="RUN_ID",
     help="Continue a paused run (its settings are stored).")
@click.version_option(message="%(prog)s %(version)s", version=None, package_name="robotlab",
                      prog_name="robot-to")
def robot_to(words: tuple[str, ...], resume_id: str | None, summary_json: bool, quiet: bool,
             **options: Any) -> None:
    """Run the loop (parse, build settings, call robotlab.to, exit with its code)."""
    objective = None if resume_id else _objective(words)
    if not resume_id and not objective:
        click.echo("Error: objective required (pass as argument or via stdin)\n", err=True)
        click.echo(click.get_current_context().get_help(), err=True)
        sys.exit(2)
    with _starting(quiet):
        import robotlab.to
        from robotlab.errors import RunExit
        from robotlab.to.runner.orchestrator import Streams
    _trace()

    settings = _settings(options)
    settings["streams"] = Streams(summary_json=summary_json, quiet=quiet)
    if resume_id:
        report = robotlab.to.resume(resume_id, **settings)
    else:
        report = robotlab.to.run(str(objective), **settings)
    if report.exit_code == RunExit.INTERRUPTED and report.run is None:
        # Ctrl-C abandoned the preflight's model call, which goes on in a daemon thread; the
        # interpreter's finalizers (litellm's client __del__ imports lazily) can then wait
        # forever on an import lock that thread holds. Nothing is left to save: leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(report.exit_code)
    sys.exit(report.exit_code)


def _trace() -> None:
    """Switch tracing on when the OTEL_* variables name an exporter (docs/observability.md);
    the iteration's children, forked from this process, trace with its provider."""
    from robotlab.errors import ConfigError
    from robotlab.observability import setup, trace_settings

    try:
        setup(trace_settings(), "robot-to")
    except ConfigError as exc:
        click.echo(f"robot-to: {exc}", err=True)
        sys.exit(2)


@click.command(name="decisions", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("run_id", required=False)
@click.option("--run-dir", metavar="PATH",
              help="Directory for run state (default from the config).")
def decisions(run_id: str | None, run_dir: str | None) -> None:
    """List a run's open decisions (default: the newest run)."""
    from robotlab.to import config
    from robotlab.to.record.decisions import report

    text, code = report(Path(run_dir or config.load().run_dir) / "runs", run_id)
    click.echo(text, err=code != 0)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: ``decisions`` as the first word selects the subcommand."""
    stay_as_init_if_pid1()  # a container's first process: its robots' and commands' orphans
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["decisions"]:
            decisions.main(args[1:], prog_name="robot-to decisions")
        else:
            robot_to.main(args, prog_name="robot-to")
    except KeyboardInterrupt:
        sys.stderr.write("robot-to: interrupted\n")
        sys.exit(130)
