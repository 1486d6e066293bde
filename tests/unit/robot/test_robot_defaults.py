"""A robot given default settings (``Robot(defaults=...)``) reads them, never the global ones."""

from __future__ import annotations

import pytest

import robotlab
from robotlab import Robot, ToolLoopError
from robotlab.testing import ScriptedLLM


def test_a_robot_given_default_settings_takes_its_model_and_limits_from_them() -> None:
    # Given default settings of its own, apart from the global ones
    base = robotlab.config()
    mine = base.model_copy(update={
        "max_tool_iterations": 1,
        "ruby_llm": base.ruby_llm.model_copy(update={"model": "given", "provider": "openai"}),
    })
    tool = robotlab.Tool.create(name="t", handler=lambda args: "ok")
    llm = ScriptedLLM([{"tool_calls": [{"name": "t"}]}] * 2 + [{"content": "never"}])

    # When a robot is built with them
    robot = Robot(defaults=mine, local_tools=[tool], llm=llm)

    # Then its model and its tool-call bound are theirs, and a robot without them keeps the global
    assert (robot.model, robot.provider) == ("given", "openai")
    with pytest.raises(ToolLoopError, match=r"exceeded max_tool_iterations \(1\)"):
        robot.run("go", tools="inherit")
    assert Robot().model == base.ruby_llm.model
