"""The only place robot-to touches the robot library: build an iteration's robot or a judge.

Tools reach the model under their spec names (``submit_iteration_result``,
``request_decision``, ``read``...). Their failures propagate out of ``run`` (so a
QualityError ends the attempt); the guard chain turns ordinary tool failures into text.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
from collections.abc import Callable
from typing import Any

from robotlab.to.evals.prose import JudgeReply
from robotlab.to.tools import ToolSpec


@dataclasses.dataclass(frozen=True)
class ModelSettings:
    """How to reach the model."""

    model: str
    provider: str | None = None
    api_base: str | None = None
    stream: bool = True
    max_tool_rounds: int = 100


def _tool_class() -> type:
    import robotlab

    class SpecTool(robotlab.Tool):  # type: ignore[name-defined,misc]
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


def build_robot(
    name: str,
    system_prompt: str,
    model: ModelSettings,
    tools: list[ToolSpec],
    on_content: Callable[[str], Any] | None = None,
) -> Any:
    """A fresh robot with ``tools`` as its local tools."""
    import robotlab

    tool_class = _tool_class()
    options: dict[str, Any] = {
        "name": name,
        "system_prompt": system_prompt,
        "model": model.model,
        "local_tools": [tool_class(spec) for spec in tools],
        "max_tool_rounds": model.max_tool_rounds,
    }
    if model.provider:
        options["provider"] = model.provider
    if model.api_base:
        options["api_base"] = model.api_base
    if model.stream and on_content is not None:
        options["on_content"] = on_content
    return robotlab.build(**options)


def run_robot(robot: Any, message: str) -> Any:
    """One ``run`` with the robot's own tools."""
    return robot.run(message, tools="inherit")


def judge(model: ModelSettings) -> Callable[[str, str], JudgeReply]:
    """A prose judge on the run's provider: ``judge(system, message) -> JudgeReply``."""

    def ask(system: str, message: str) -> JudgeReply:
        robot = build_robot("prose-judge", system, dataclasses.replace(model, stream=False), [])
        result = robot.run(message)
        return JudgeReply(result.reply or "", int(result.input_tokens or 0), int(result.output_tokens or 0))

    return ask


@functools.cache
def warm_up() -> None:
    """Import the robot library and litellm once in the orchestrator, so every forked
    iteration child starts with them loaded (a fork then costs milliseconds, not seconds)."""
    import robotlab  # noqa: F401
    from robotlab.config import prepare_litellm_environment

    prepare_litellm_environment()
    import litellm

    # A mocked completion (no network) pulls in what litellm imports lazily on its first call.
    messages = [{"role": "user", "content": "warm-up"}]
    try:
        for stream in (False, True):
            litellm.completion(model="openai/warm-up", messages=messages, mock_response="ok", stream=stream,
                               api_key="none", api_base="http://127.0.0.1:9/v1")
    except Exception:  # warming is an optimisation; the real call reports real errors
        pass
    # Everything imported so far is shared copy-on-write with every forked child; freezing it
    # keeps the children's garbage collections from touching (and so copying) those pages.
    gc.freeze()
