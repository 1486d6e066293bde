"""The error tree (spec 13): retryable classification and how tool errors reach the model."""

from __future__ import annotations

import inspect

import pytest

import robotlab
from robotlab import errors
from robotlab.errors import (
    BoundaryError,
    BudgetExceeded,
    BusError,
    ConfigError,
    DependencyError,
    InferenceError,
    MCPError,
    ToolError,
    ToolLoopError,
    ToolNotFoundError,
    retryable,
    retryable_classes,
)
from robotlab.testing import ScriptedLLM


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (InferenceError("x"), True),
        (InferenceError("x", cause="timeout"), True),
        (InferenceError("x", cause="rate_limit"), True),
        (InferenceError("x", cause="context_window"), False),
        (InferenceError("x", cause="auth"), False),
        (InferenceError("x", cause="model_not_found"), False),
        (InferenceError("x", cause="bad_request"), False),
        (ToolLoopError("x"), False),
        (MCPError("x"), False),
        (MCPError("x", retryable=True), True),
        (ToolError("x"), False),
        (ToolError("x", retryable=True), True),
        (BudgetExceeded("x"), False),
        (BusError("x"), False),
        (ConfigError("x"), False),
        (DependencyError("x"), False),
        (ToolNotFoundError("x"), False),
        (BoundaryError("x"), False),
        (ValueError("x"), False),
        (None, False),
    ],
)
def test_retryable_table(error: BaseException | None, expected: bool) -> None:
    assert retryable(error) is expected


def test_retryable_classes_is_inference_error_only() -> None:
    assert retryable_classes() == (InferenceError,)


def test_tool_loop_error_is_an_inference_error_but_never_retryable() -> None:
    assert issubclass(ToolLoopError, InferenceError)
    assert not retryable(ToolLoopError("tripped"))


def test_every_public_error_is_drawn_in_the_tree_and_has_an_exit_code() -> None:
    tree = errors.__doc__ or ""
    classes = [obj for _, obj in inspect.getmembers(errors, inspect.isclass)
               if issubclass(obj, errors.RobotlabError) and not obj.__name__.startswith("_")]
    assert classes
    for cls in classes:
        assert cls.__name__ in tree or cls is errors.ConfigurationError, cls.__name__
        assert isinstance(cls.exit_code, int)


def test_ruby_names_are_aliases() -> None:
    assert robotlab.ConfigurationError is ConfigError


def test_retryable_tool_error_reaches_the_model_with_the_suffix() -> None:
    @robotlab.tool(name="t")
    def flaky() -> str:
        """Call upstream."""
        raise ToolError("upstream 503", retryable=True)

    llm = ScriptedLLM([{"tool_calls": [{"name": "t", "arguments": {}}]}, {"content": "ok"}])
    robot = robotlab.build(local_tools=[flaky], llm=llm)
    assert robot.run("go", tools="inherit").reply == "ok"
    assert llm.requests[1].tool_results() == ["Error (t): upstream 503 (retryable)"]
