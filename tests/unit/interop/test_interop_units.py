"""The crew's tools from ``ps`` rows, and the rules of an HTTP bind (no processes)."""

from __future__ import annotations

import socket

import pytest

from robotlab.errors import ConfigError
from robotlab.interop.bind import Bind, check_exposure, listen, parse_bind
from robotlab.interop.crew import RobotTool, reply_text, robot_tools


def row(name: str, role: str = "robot") -> dict[str, str]:
    return {"name": name, "role": role, "instance": "i"}


def test_each_robot_name_is_one_tool_and_clients_and_unfit_names_are_not() -> None:
    rows = [row("bob"), row("bob"), row("a.b-c_d"), row("robotlab-send", "client"), row("ünïcode"),
            row("x" * 125)]
    tools, left_out = robot_tools(rows)
    assert tools == [RobotTool("a.b-c_d", 1), RobotTool("bob", 2)]
    assert [tool.name for tool in tools] == ["ask_a.b-c_d", "ask_bob"]
    assert "one of its 2 instances" in tools[1].description
    assert "instances" not in tools[0].description
    assert left_out == ["x" * 125, "ünïcode"]


def test_a_reply_is_text_as_it_is_and_data_as_json() -> None:
    assert reply_text("pong") == "pong"
    assert reply_text({"n": 1}) == '{"n": 1}'


@pytest.mark.parametrize(("text", "bind"), [("127.0.0.1:8765", Bind("127.0.0.1", 8765)),
                                            ("[::1]:0", Bind("::1", 0)),
                                            ("localhost:80", Bind("localhost", 80))])
def test_host_and_port_parse(text: str, bind: Bind) -> None:
    assert parse_bind(text) == bind
    assert str(bind) == text


@pytest.mark.parametrize("text", ["8765", ":8765", "host:", "host:http", "host:65536"])
def test_anything_else_is_one_line_naming_the_form(text: str) -> None:
    with pytest.raises(ConfigError,
                       match="is not HOST:PORT: give an address such as 127.0.0.1:8765"):
        parse_bind(text)


def test_beyond_loopback_needs_the_opt_in() -> None:
    for loopback in ("127.0.0.1:1", "localhost:1", "[::1]:1"):
        check_exposure(parse_bind(loopback), insecure=False, what="MCP")
    for exposed in ("0.0.0.0:1", "192.168.1.5:1", "[::]:1", "example.org:1"):
        with pytest.raises(ConfigError,
                           match="refusing to serve MCP on "
                                 f"{exposed.replace('[', '.').replace(']', '.')}"):
            check_exposure(parse_bind(exposed), insecure=False, what="MCP")
        check_exposure(parse_bind(exposed), insecure=True, what="MCP")


def test_a_server_with_a_key_of_its_own_names_it_in_the_refusal() -> None:
    with pytest.raises(ConfigError, match=r"\(127.0.0.1\), pass --access-key FILE so that only "
                                          r"who holds the key gets in, or pass --insecure"):
        check_exposure(parse_bind("0.0.0.0:1"), insecure=False, what="the web console",
                       key_option="--access-key")


def test_a_taken_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError,
                           match=f"cannot listen on 127.0.0.1:{port}: Address already in use"):
            listen(Bind("127.0.0.1", port))
    with listen(Bind("127.0.0.1", 0)) as sock:
        assert sock.getsockname()[1] != 0
