"""A handler-only robotd's command line, read without click: what it takes, and what it leaves to
click."""

from __future__ import annotations

import pytest

from robotlab.robotd.command import robotd
from robotlab.robotd.flags import _KEYS, DEFAULTS, handler_flags


def test_a_handler_line_gets_the_click_commands_defaults() -> None:
    assert handler_flags(["--name", "echo", "--handler", "mod:f"]) == {**DEFAULTS, "name": "echo",
                                                                      "handler_path": "mod:f"}


def test_values_come_as_separate_words_or_after_an_equals_sign() -> None:
    flags = handler_flags(["--name=echo", "--handler", "mod:f",
                           "--broker=tcp://127.0.0.1:5555,tcp://h:1",
                           "--max-inflight", "4", "--connect-timeout=2.5", "--log-format", "json"])
    assert flags is not None
    assert (flags["url"], flags["max_inflight"], flags["connect_timeout"], flags["log_format"]) == (
        "tcp://127.0.0.1:5555,tcp://h:1", 4, 2.5, "json")


@pytest.mark.parametrize("argv", [
    ["--help"],
    ["--name", "echo", "--handler", "mod:f", "--version"],
    ["--name", "echo"],  # no handler: a robot, or a usage error
    ["--name", "echo", "--handler", "mod:f", "--system-prompt", "hi"],
    ["--name", "echo", "--handler", "mod:f", "--serve"],
    ["--name", "echo", "--handler", "mod:f", "--name", "other"],
    ["--name", "echo", "--handler"],
    ["--name", "echo", "--handler", "mod:f", "--instance", "--parent"],
    ["--name", "a b", "--handler", "mod:f"],
    ["--name=", "--handler", "mod:f"],
    ["--name", "echo", "--handler", "mod:f", "--max-inflight", "0"],
    ["--name", "echo", "--handler", "mod:f", "--max-inflight", "many"],
    ["--name", "echo", "--handler", "mod:f", "--connect-timeout", "-1"],
    ["--name", "echo", "--handler", "mod:f", "--log-format", "xml"],
    ["--name", "echo", "--handler", "mod:f", "extra"],
])
def test_anything_else_is_left_to_the_click_command(argv: list[str]) -> None:
    assert handler_flags(argv) is None


def test_each_flag_read_is_the_click_commands_own_with_its_default() -> None:
    options = {opt: param for param in robotd.params for opt in param.opts}
    for flag, key in _KEYS.items():
        assert options[flag].name == key, flag
        if key in DEFAULTS:
            assert options[flag].default == DEFAULTS[key], flag
