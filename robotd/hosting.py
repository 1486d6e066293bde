"""robotd hosting a ``Robot``: build it from the command line (or a fork request), join, serve.

Bad settings (no such template, an unknown provider, a prompts folder that does not exist)
raise :class:`~robotlab.errors.ConfigError` before anything connects, so the daemon exits 78
and systemd does not restart-loop.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from robotlab.config.model_settings import ModelSettings
from robotlab.errors import ConfigError
from robotlab.service import Notifier

from .daemon import Daemon, DaemonConfig
from .robot_stats import RobotStats

log = logging.getLogger("robotlab.robotd")

__all__ = ["RobotSpec", "build_robot", "check_provider", "from_fork_request", "host",
           "hosting_daemon", "warm_llm"]


@dataclass(frozen=True)
class RobotSpec:
    """What robot a robotd hosts (the robot half of ``robotd``'s options)."""

    template: str | None = None
    system_prompt: str | None = None
    llm: ModelSettings = field(default_factory=ModelSettings)
    """Which model the robot calls (spawn passes the parent's model, provider and api_base)."""
    prompts_dir: str | None = None
    """A folder searched first for templates."""
    serve: bool = False
    """Answer every inbound task with ``run`` and send the reply back."""
    settings: dict[str, Any] = field(default_factory=dict)
    """More ``Robot`` keyword settings (budgets, tool rounds...); never a model field, which
    ``llm`` holds."""
    fork_server: str | None = None
    """The fork server socket this robot's own ``spawn`` calls reuse."""
    history_file: str | None = None
    """The robot's conversation log: loaded if it exists, saved after every step."""
    shared_budget: dict[str, str] | None = None
    """``{"service", "owner"}``: the parent's budget service a spawned robot draws on."""
    stream: bool = True
    """Stream the model's replies. A server notices that a client gave up only on a stream
    (llama.cpp's Python server goes on generating a whole reply nobody waits for), so a call
    stopped at a message's deadline stops the server's work too."""

    def __post_init__(self) -> None:
        # a model field here would override ``llm`` in build_robot: a second record of the model
        stray = sorted(set(self.settings) & set(ModelSettings.model_fields))
        if stray:
            raise TypeError(f"RobotSpec settings hold model fields {stray}: give them in llm")

    def to_dict(self) -> dict[str, Any]:
        """Plain data (a fork request carries it as JSON)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**data, "llm": self.llm.set_fields()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RobotSpec:
        """The spec ``to_dict`` described.

        Raises:
            TypeError: a key that is not a field; ConfigError: a model field of the wrong type.
        """
        return cls(**{**data, "llm": ModelSettings(**(data.get("llm") or {}))})


def from_fork_request(request: dict[str, Any], ready_fd: int) -> tuple[DaemonConfig, RobotSpec]:
    """The daemon and robot a fork request describes (``robotd/forkserver.py``), readiness told on
    ``ready_fd``.

    Raises:
        TypeError: a field that does not exist; KeyError: no ``daemon`` or ``robot`` part;
            ConfigError: a model field of the wrong type.
    """
    config = DaemonConfig(**request["daemon"], ready_fd=ready_fd, quiet=True)
    return config, RobotSpec.from_dict(request["robot"])


def check_provider(provider: str) -> None:
    """Refuse a provider litellm does not know.

    Raises:
        ConfigError: naming the provider and a few that exist.
    """
    warm_llm()
    import litellm

    known = {str(getattr(p, "value", p)) for p in litellm.provider_list}
    if provider not in known:
        examples = ", ".join(sorted(known & {"anthropic", "openai", "ollama", "gemini",
                                             "openrouter", "groq"}))
        raise ConfigError(f"unknown provider {provider!r} (known ones include {examples})")


def warm_llm() -> None:
    """Import the LLM client now, so the first task does not wait for it (seconds, cold); its
    log lines then go through this process's handler, once (JSON with ``--log-format json``)."""
    from robotlab.llm import load_client

    load_client()


def load_model_client(name: str, robot: Any, stats: RobotStats, serve: bool) -> None:
    """Import the LLM client and look up the model's price; then, for a served robot, warn of a
    key its model lacks."""
    try:
        warm_llm()
        stats.look_up_price()
    except Exception as exc:  # the first model call raises it again, and its sender hears it
        log.error("robotd %s: the model client did not load: %s", name, exc)
        return
    log.debug("robotd %s: model client loaded", name)
    if serve:
        warn_missing_credentials(name, robot)


def warn_missing_credentials(name: str, robot: Any) -> None:
    """One WARNING naming the key variables the robot's model needs and the environment lacks:
    without them every message would be nacked, and the operator would learn why only from the
    first nack."""
    from robotlab.llm import missing_credentials, model_id

    if robot.config.api_key:
        return
    missing = missing_credentials(model_id(robot.model, robot.provider), robot.config.api_base)
    if missing:
        log.warning("robotd %s: %s needs %s, which is not set: every message will fail until it is "
                    "set (or pass --api-base URL for a local server)", name,
                    model_id(robot.model, robot.provider), " and ".join(missing))


def build_robot(name: str, spec: RobotSpec) -> Any:
    """Make the hosted robot.

    Raises:
        ConfigError: no such template or prompts folder, an unknown provider, or a setting
            ``Robot`` does not take.
    """
    import robotlab
    from robotlab.robot.robot import Robot

    if spec.llm.provider:
        check_provider(spec.llm.provider)
    if spec.prompts_dir:
        if not Path(spec.prompts_dir).is_dir():
            raise ConfigError(f"--prompts-dir {spec.prompts_dir!r} is not a folder")
        robotlab.configure(prompts_dir=spec.prompts_dir)
    history = {"history_path": spec.history_file} if spec.history_file else {}
    streams = spec.stream and "on_content" not in spec.settings
    streaming = {"on_content": _discard} if streams else {}
    settings = {**spec.llm.set_fields(), **history, **streaming, **spec.settings}
    try:
        robot = Robot(name=name, template=spec.template, system_prompt=spec.system_prompt,
                      **settings)
    except TypeError as exc:
        raise ConfigError(f"robot {name}: {exc}") from exc
    if spec.shared_budget:
        from robotlab.robot.shared_budget import share_parent_budget

        share_parent_budget(robot, spec.shared_budget["service"], spec.shared_budget["owner"])
    return robot


def _discard(_chunk: str) -> None:
    """The hosted robot's ``on_content``: it streams so that a stopped call stops the server, and
    nobody reads the chunks (the reply goes back whole)."""


def host(config: DaemonConfig, spec: RobotSpec, notifier: Notifier | None = None) -> int:
    """Build the robot, join the bus as it, serve if asked, and run until stopped.

    Raises:
        ConfigError: see :func:`build_robot`; or the broker refused this robot's key.
    """
    return hosting_daemon(config, spec, notifier).run()


def hosting_daemon(config: DaemonConfig, spec: RobotSpec,
                   notifier: Notifier | None = None) -> Daemon:
    """The daemon :func:`host` runs: the robot built, not yet on the bus (``run`` joins and serves).

    Raises:
        ConfigError: see :func:`build_robot`.
    """
    from robotlab.robot.recent_runs import RecentRuns

    robot = build_robot(config.name, spec)
    stats = RobotStats.of(robot)
    # what `robotlab runs NAME` and the web console show
    RecentRuns.of(robot, priced=lambda: stats.priced)
    # The LLM client (seconds, cold) loads while the robot joins, so it is on the bus at once; a
    # first task waits in its model call for the load to end (robotlab.llm), and the broker does
    # not time it out meanwhile: a live receiver keeps what it holds.
    threading.Thread(target=load_model_client, args=(config.name, robot, stats, spec.serve),
                     name="model-client", daemon=True).start()
    if spec.fork_server:
        from robotlab.robot.spawn import use_fork_server

        use_fork_server(spec.fork_server)

    def attach(client: Any) -> None:
        client.stats.source = stats.read  # what `robotlab ps` shows of this robot
        robot.with_bus(client)
        if spec.serve:
            robot.serve()
        log_each_message(client, config.name)

    if not spec.serve:
        log.warning("robotd %s hosts a robot without --serve: it acks messages but never runs or "
                    "answers them; pass --serve to answer each one with run()", config.name)
    return Daemon(config, attach=attach, notifier=notifier)


def log_each_message(client: Any, name: str) -> None:
    """Wrap the client's handler: one INFO line as the robot takes up a message and one when it
    is done with it, each naming the message (and in JSON its robot, instance and trace): what an
    operator searches a robot's log for. A robot's message takes seconds, so two lines are cheap."""
    dispatcher = client.dispatcher
    inner = dispatcher.handler

    def handle(*args: Any) -> Any:
        message = args[-1]  # (message) or, settled by hand, (delivery, message)
        log.info("robotd %s: message %s from %s (%s, attempt %d)", name, message.id, message.sender,
                 message.type, message.attempt)
        started = time.monotonic()
        try:
            return inner(*args)
        finally:
            log.info("robotd %s: done with message %s after %.1fs", name, message.id,
                     time.monotonic() - started)

    client.on_message(handle, manual=dispatcher.manual, inline=False)
