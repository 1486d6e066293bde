"""The only place robot-to touches the robot library: build an iteration's robot or a judge.

Tools reach the model under their spec names (``submit_iteration_result``,
``request_decision``, ``read``...). Their failures propagate out of ``run`` (so a
QualityError ends the attempt); the guard chain turns ordinary tool failures into text.

An iteration's robot is overseen from inside its child: its model calls go through a
``MeteredLLM`` (the run's token budget, checked before every call), every tool name it asks
for reaches the quality monitor through ``on_tool_call``, how each run ended reaches it
through an ``after_llm_generation`` hook, and a reply the output-token limit cut reaches the
orchestrator (``model:truncated``) through ``on_truncated``.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
from collections.abc import Callable
from typing import Any

from robotlab.config.model_settings import ModelSettings
from robotlab.errors import SetupError
from robotlab.to.child.token_meter import MeteredLLM
from robotlab.to.config import RobotToSettings
from robotlab.to.evals.prose import JudgeReply
from robotlab.to.guards.quality import QualityMonitor
from robotlab.to.tools import ToolSpec


class RobotModel(ModelSettings):
    """How robot-to's robots reach their model: the library's ``ModelSettings`` (model, provider,
    api_base, ``max_tokens``: the longest reply a call may write, None the global
    ``chat.with_params.max_tokens``, 0 no cap; ``request_timeout``: robot-to's ``call_timeout``)
    plus how robot-to runs them. Built from robot-to's settings by ``of`` and ``judging``."""

    stream: bool = True
    """Stream replies (the live view counts the chunks)."""
    max_tool_rounds: int = 100
    """The robot's circuit breaker."""

    @classmethod
    def of(cls, settings: RobotToSettings) -> RobotModel:
        """The iteration's robot's: the settings' ``model_settings`` with their streaming and
        tool rounds."""
        return cls(**settings.model_settings.set_fields(), stream=settings.stream,
                   max_tool_rounds=settings.max_tool_rounds)

    @classmethod
    def judging(cls, settings: RobotToSettings) -> RobotModel:
        """The prose judge's: the settings' ``judge_model_settings``, not streamed."""
        return cls(**settings.judge_model_settings.set_fields(), stream=False)


def _tool_class() -> type:
    import robotlab

    class SpecTool(robotlab.Tool):
        """A ToolSpec as a robot tool whose failures end the run."""

        raise_on_error = True

        def __init__(self, spec: ToolSpec) -> None:
            self.name = spec.name
            super().__init__()
            self.description = spec.description
            self.parameters = spec.parameters
            self._handler = spec.handler

        def call(self, arguments: dict[str, Any]) -> Any:
            return self._handler(arguments)

        def execute(self, **kwargs: Any) -> Any:
            return self._handler(kwargs)

    return SpecTool


@dataclasses.dataclass
class Oversight:
    """What watches an iteration's robot from inside its child process.

    Attributes:
        monitor: the quality monitor of the iteration.
        submitted: whether the robot has submitted its result (an empty reply after that is fine).
        meter: the metered LLM the robot calls (built by ``metered_llm``).
        token_budget: the robot's own ``token_budget`` (what was left of the run's at the start).
        last_reply: the text of the model's newest reply that had any.
        tell: sends a progress event to the orchestrator.
    """

    monitor: QualityMonitor
    submitted: Callable[[], bool]
    meter: MeteredLLM
    token_budget: int | None = None
    last_reply: str | None = None
    tell: Callable[[dict[str, Any]], None] = lambda _event: None


def metered_llm(call_timeout: float | None = None,
                on_retry: Callable[[dict[str, Any]], None] | None = None) -> MeteredLLM:
    """The robot library's LLM behind a meter, every call (retries included) within
    ``call_timeout``.

    The library's client keeps the one deadline, retries transient failures (the global
    ``max_retries`` times) inside it and reports each retry to ``on_retry``. Without
    ``call_timeout`` the global ``request_timeout`` applies (sized per call when unset).
    """
    from robotlab.config.cascade import config
    from robotlab.llm import LiteLLM

    settings = config().ruby_llm
    return MeteredLLM(LiteLLM(max_retries=settings.max_retries,
                              timeout=call_timeout or settings.request_timeout, on_retry=on_retry))


def _quality_hook(oversight: Oversight) -> Any:
    import robotlab

    class QualityHook(robotlab.Hook):
        """Tells the quality monitor how each run of the robot ended."""

        namespace = "robot_to_quality"

        def after_llm_generation(self, ctx: Any) -> None:
            reply = getattr(ctx.generation_response, "reply", None)
            content = getattr(reply, "content", None)
            calls = len(getattr(reply, "tool_calls", ()) or ())
            if content:
                oversight.last_reply = content
            oversight.monitor.run_ended(content, calls, oversight.submitted())

    return QualityHook()


def build_robot(
    name: str,
    system_prompt: str,
    model: RobotModel,
    tools: list[ToolSpec],
    on_content: Callable[[str], Any] | None = None,
    oversight: Oversight | None = None,
) -> Any:
    """A fresh robot with ``tools`` as its local tools (overseen when ``oversight`` is given)."""
    import robotlab

    tool_class = _tool_class()
    options: dict[str, Any] = {
        "name": name,
        "system_prompt": system_prompt,
        "local_tools": [tool_class(spec) for spec in tools],
        "max_tool_rounds": model.max_tool_rounds,
        # The library's fields as they are: an unset max_tokens leaves the global default, 0 no cap.
        **model.set_fields(tuple(ModelSettings.model_fields)),
    }
    if model.stream and on_content is not None:
        options["on_content"] = on_content
    if oversight is None:
        return robotlab.build(**options)
    known = {spec.name for spec in tools}
    # robot-to reports a cut reply itself, naming its own flag (--max-output-tokens), so the
    # library's warning, which names robotd's, stays silent.
    options.update(llm=oversight.meter, token_budget=oversight.token_budget,
                   on_tool_call=lambda call: oversight.monitor.tool_called(call.name, known),
                   on_truncated=lambda limit: oversight.tell({"event": "model:truncated",
                                                              "max_tokens": limit}))
    return robotlab.build(**options).on(_quality_hook(oversight))


HOTTER = 0.3
"""How much hotter each whole-file attempt after a reply that changed nothing samples."""
HOTTEST = 1.3
"""The hottest such an attempt samples: above it a small model's files stop being code."""


def attempt_temperature(model: RobotModel, hotter: int) -> float | None:
    """The temperature of a whole-file attempt ``hotter`` steps above the robot's own (its
    ``temperature``, else the library's default for robots that set none); None when neither
    is set (then the provider's default applies, and nothing is raised)."""
    from robotlab.config.cascade import config

    base = model.temperature if model.temperature is not None else config().chat.with_temperature
    return None if base is None else round(max(base, min(base + hotter * HOTTER, HOTTEST)), 2)


def compact(robot: Any) -> tuple[int, int]:
    """Shrink the robot's conversation with the library's compaction; (messages before, after)."""
    before = len(robot.conversation.messages())
    robot.compress_history(recent_turns=2)
    return before, len(robot.conversation.messages())


def run_robot(robot: Any, message: str) -> Any:
    """One ``run`` with the robot's own tools."""
    return robot.run(message, tools="inherit")


def judge(model: RobotModel) -> Callable[[str, str], JudgeReply]:
    """A prose judge on the run's provider: ``judge(system, message) -> JudgeReply``."""

    def ask(system: str, message: str) -> JudgeReply:
        robot = build_robot("prose-judge", system, model.model_copy(update={"stream": False}), [])
        result = robot.run(message)
        return JudgeReply(result.reply or "", int(result.input_tokens or 0),
                          int(result.output_tokens or 0))

    return ask


def ping(model: RobotModel, timeout: float) -> None:
    """One minimal model call with no retries, the way the iteration's robot calls the model.

    Raises:
        InferenceError: the provider failed (its cause is in ``__cause__``).
    """
    from robotlab.config.cascade import dummy_api_key_needed
    from robotlab.llm import LiteLLM

    params: dict[str, Any] = {"model": model.qualified_id(), "max_tokens": 16}
    if model.api_base:
        params["api_base"] = model.api_base
        if dummy_api_key_needed(model.provider):
            params["api_key"] = "not-needed"
    LiteLLM(max_retries=0, timeout=timeout).complete(
        [{"role": "user", "content": "Reply with OK."}], [], params)


def load_model_client() -> None:
    """Import litellm (seconds on a cold start; the caller shows a spinner meanwhile), set up as
    robotlab uses it: with its debug prints (an ANSI "Provider List" line on stdout) off."""
    from robotlab.llm import _litellm

    _litellm()


def check_provider(provider: str | None) -> None:
    """Refuse a provider litellm does not know, with one line naming some it does.

    Raises:
        SetupError: robot-to cannot start with it (exit 2).
    """
    from robotlab.llm import _litellm

    known = {str(getattr(p, "value", p)) for p in _litellm().provider_list}
    if provider is None or provider in known:
        return
    popular = ("anthropic", "gemini", "groq", "ollama", "openai", "openrouter")
    examples = ", ".join(p for p in popular if p in known)
    raise SetupError(f"unknown provider {provider!r}: known ones include {examples} "
                     "(all of them: https://docs.litellm.ai/docs/providers)")


@functools.cache
def warm_up() -> None:
    """Import the robot library and litellm once in the orchestrator, so every forked
    iteration child starts with them loaded (a fork then costs milliseconds, not seconds)."""
    import robotlab
    from robotlab.llm import _litellm

    # robotlab's names load on first use: touch the ones every child uses, so it inherits them.
    robotlab.build, robotlab.Tool, robotlab.Hook  # noqa: B018

    litellm = _litellm()

    # A mocked completion (no network) pulls in what litellm imports lazily on its first call.
    messages = [{"role": "user", "content": "warm-up"}]
    try:
        for stream in (False, True):
            litellm.completion(model="openai/warm-up", messages=messages, mock_response="ok",
                               stream=stream, api_key="none", api_base="http://127.0.0.1:9/v1")
    except Exception:  # warming is an optimisation; the real call reports real errors
        pass
    # Everything imported so far is shared copy-on-write with every forked child; freezing it
    # keeps the children's garbage collections from touching (and so copying) those pages.
    gc.freeze()
