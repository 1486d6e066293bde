"""The logging a process hands on to the processes it starts (a spawned robot's fork server)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from robotlab.service import logging_options
from robotlab.service.logs import JsonFormatter


@pytest.fixture
def root() -> Iterator[logging.Logger]:
    """The root logger, its level and handlers put back after the test."""
    logger = logging.getLogger()
    level, handlers = logger.level, list(logger.handlers)
    yield logger
    logger.setLevel(level)
    logger.handlers[:] = handlers


def test_a_child_gets_this_process_level_and_format(root: logging.Logger) -> None:
    root.setLevel(logging.ERROR)
    assert logging_options() == ["--log-level", "ERROR", "--log-format", "text"]
    json_lines = logging.StreamHandler()
    json_lines.setFormatter(JsonFormatter())
    root.addHandler(json_lines)
    root.setLevel(logging.INFO)
    assert logging_options() == ["--log-level", "INFO", "--log-format", "json"]


def test_a_custom_level_becomes_the_nearest_named_one_below(root: logging.Logger) -> None:
    root.setLevel(25)  # between INFO and WARNING: --log-level takes names only
    assert logging_options()[:2] == ["--log-level", "INFO"]
    root.setLevel(5)
    assert logging_options()[:2] == ["--log-level", "DEBUG"]
