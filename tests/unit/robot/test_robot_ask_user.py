"""AskUser (spec 14): the model asks the person at the terminal, through
robot.input/robot.output."""

from __future__ import annotations

import io
import sys

import pytest

from robotlab import Robot
from robotlab.testing import ScriptedLLM
from robotlab.tools import AskUser


def ask(**arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": "robot_lab--ask_user", "arguments": arguments, "id": "q1"}]}


def robot_answering(typed: str, *turns: dict[str, object]) -> tuple[Robot, ScriptedLLM]:
    llm = ScriptedLLM([*turns, {"content": "thanks"}])
    robot = Robot(name="onboarding", llm=llm)
    robot.update(local_tools=[AskUser(robot=robot)])
    robot.input, robot.output = io.StringIO(typed), io.StringIO()
    return robot, llm


def test_a_numbered_choice_is_shown_and_a_number_maps_to_it() -> None:
    robot, llm = robot_answering("2\n", ask(question="Which language?",
                                            choices=["Ruby", "Python", "Go"]))
    robot.run("set me up", tools=["robot_lab--ask_user"])
    assert robot.output.getvalue() == ("\n[onboarding] Which language?\n  1. Ruby\n  2. Python\n  "
                                       "3. Go\n> ")
    assert llm.requests[1].tool_results() == ["Python"]
    assert llm.requests[0].tool_names == ["robot_lab--ask_user"]


def test_an_empty_answer_takes_the_default_shown_in_the_prompt() -> None:
    robot, llm = robot_answering("\n", ask(question="Continue?", default="yes"))
    robot.run("go", tools="inherit")
    assert robot.output.getvalue().endswith("[onboarding] Continue?\n> [yes] ")
    assert llm.requests[1].tool_results() == ["yes"]


@pytest.mark.parametrize(("typed", "answer"),
                         [("7\n", "7"), ("Go\n", "Go"), ("0\n", "0"), ("", "")])
def test_other_answers_come_back_as_typed(typed: str, answer: str) -> None:
    robot = Robot(name="r")
    robot.input, robot.output = io.StringIO(typed), io.StringIO()
    assert AskUser(robot=robot).call({"question": "Pick", "choices": ["a", "b"]}) == answer


def test_without_a_robot_it_uses_stdin_stdout_and_the_label_robot(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("blue\n"))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert AskUser().call({"question": "Colour?"}) == "blue"
    assert out.getvalue() == "\n[Robot] Colour?\n> "


def test_robot_streams_default_to_the_process_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    robot = Robot()
    fake_in = io.StringIO()
    monkeypatch.setattr(sys, "stdin", fake_in)
    assert robot.input is fake_in and robot.output is sys.stdout
    robot.input = io.StringIO("x")
    robot.input = None
    assert robot.input is fake_in


def test_the_schema_requires_only_the_question() -> None:
    schema = AskUser().to_json_schema()["function"]
    assert schema["name"] == "robot_lab--ask_user"
    assert schema["parameters"]["required"] == ["question"]
    assert set(schema["parameters"]["properties"]) == {"question", "choices", "default"}
