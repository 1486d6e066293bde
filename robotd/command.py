"""The ``robotd`` command as click reads it: every flag, its help and usage errors, a robot or a
handler hosted.

A handler-only command line is read without click first (``flags.py``); this command reads the rest.
"""

from __future__ import annotations

import sys

import click

from robotlab.bus.config import check_name
from robotlab.cli.errors import Command, checked, exits_on_error
from robotlab.errors import ConfigError
from robotlab.service import LOG_FORMATS

from .start import prepare, serve_handler


@click.command(cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--name", required=True, callback=checked(check_name),
              help="Robot name to receive messages for.")
@click.option("--broker", "url", default=None,
              help="Broker address, or several comma-separated (a primary and its standby) "
                   "(default: $ROBOT_LAB_BROKER, else tcp://127.0.0.1:5555).")
@click.option("--template", default=None,
              help="Template of the hosted robot (a name or a .md path).")
@click.option("--system-prompt", default=None, help="Inline system prompt of the hosted robot.")
@click.option("--model", default=None,
              help="Model of the hosted robot (default: the global configuration's).")
@click.option("--provider", default=None, help="Provider (anthropic, openai, ollama, ...).")
@click.option("--api-base", default=None,
              help="Server URL for OpenAI-compatible or local providers.")
@click.option("--max-tokens", type=click.IntRange(min=0), default=None,
              help="Longest reply the hosted robot may write; 0: no cap (default: "
                   "chat.with_params.max_tokens, 4096).")
@click.option("--stream/--no-stream", default=True, show_default=True,
              help="Stream model replies: a call stopped at its deadline then also stops the model "
                   "server's work.")
@click.option("--prompts-dir", default=None, help="Folder searched first for templates.")
@click.option("--history-file", default=None,
              help="Conversation log of the hosted robot: loaded if it exists, saved after every "
                   "step.")
@click.option("--serve", is_flag=True,
              help="Answer every inbound task with run() and send the reply back.")
@click.option("--handler", "handler_path", default=None,
              help="MODULE:FUNCTION called with each inbound message.")
@click.option("--instance", default=None,
              help="Stable instance id (default: a fresh one per process).")
@click.option("--parent", default=None,
              help="Name of the robot that spawned this one (shown by `robotlab ps`).")
@click.option("--keys", "keys_folder", default=None,
              help="CURVE keys folder, for a broker run with --keys (default: $ROBOT_LAB_KEYS).")
@click.option("--key", "key_file", default=None,
              help="Secret key file of this robot (default: DIR/NAME.key_secret).")
@click.option("--max-inflight", type=click.IntRange(1), default=16, show_default=True,
              help="Deliveries the broker may queue here (handled one at a time).")
@click.option("--connect-timeout", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Seconds to wait for the broker at start, then exit 75; 0 waits for ever, "
                   "logging each retry.")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
              help="text for people, json for journald or Loki (one object a line).")
@click.version_option(package_name="robotlab")
@exits_on_error
def robotd(name: str, url: str | None, template: str | None, system_prompt: str | None,
           model: str | None, provider: str | None, api_base: str | None, max_tokens: int | None,
           stream: bool, prompts_dir: str | None, history_file: str | None, serve: bool,
           handler_path: str | None, instance: str | None, parent: str | None,
           keys_folder: str | None, key_file: str | None, connect_timeout: float,
           max_inflight: int, log_level: str, log_format: str) -> None:
    """Host one robot (or any callable) as its own process on the bus."""
    config, notifier = prepare(name=name, url=url, instance=instance, parent=parent,
                               keys_folder=keys_folder,
                               key_file=key_file, connect_timeout=connect_timeout,
                               max_inflight=max_inflight,
                               log_level=log_level, log_format=log_format)
    robot_options = (template, system_prompt, model, provider, api_base, prompts_dir, history_file)
    if handler_path is not None:
        if any(robot_options) or max_tokens is not None or serve:
            raise ConfigError("--handler hosts a function; it does not combine with the robot "
                              "options")
        sys.exit(serve_handler(config, notifier, handler_path))
    if not template and not system_prompt:
        raise ConfigError("robotd needs something to host: --template, --system-prompt or "
                          "--handler")
    # Imported here, not at the top: pydantic and the robot stay out of `robotd --help`.
    from robotlab.config.model_settings import ModelSettings

    from .hosting import RobotSpec, host

    llm = ModelSettings(model=model, provider=provider, api_base=api_base, max_tokens=max_tokens)
    spec = RobotSpec(template=template, system_prompt=system_prompt, prompts_dir=prompts_dir,
                     serve=serve, llm=llm, history_file=history_file, stream=stream)
    sys.exit(host(config, spec, notifier))
