"""`robotlab mcp-serve` against a broker run with CURVE keys: with an authorized key it lists and
asks the crew like any member; with a key the broker does not know it stops with one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import Client

from robotlab.cli.robotlab_cli import main
from tests.process.conftest import Processes, broker_argv, free_tcp_url
from tests.process.test_mcp_serve_processes import mcp_serve_argv, over_stdio, text_of, tool_names

pytestmark = pytest.mark.process


@pytest.fixture
def keys_dir(tmp_path: Path) -> Path:
    """The broker's key, bob's (only bob) and the crew server's (any name, admin: it lists
    members)."""
    folder = tmp_path / "keys"
    runner = CliRunner()
    for argv in (["broker"], ["bob", "--robot", "bob"],
                 ["crew", "--robot", "*", "--role", "admin"]):
        result = runner.invoke(main, ["keys", "new", *argv, "--dir", str(folder)])
        assert result.exit_code == 0, result.output
    return folder


@pytest.fixture
def keyed_crew(processes: Processes, keys_dir: Path) -> str:
    """A keyed broker on loopback TCP with bob (an echo robotd with his own key) on it; its URL."""
    url = free_tcp_url()
    processes.keep(broker_argv(url, "--keys", str(keys_dir)),
                   lambda proc: "listening on" in proc.output(), name="broker")
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker", url, "--handler",
            "handlers:echo", "--keys", str(keys_dir)]
    processes.keep(argv, lambda proc: "ready" in proc.output(), name="robotd-bob", timeout=60)
    return url


def test_with_an_authorized_key_the_keyed_crew_is_listed_and_asked(keyed_crew: str, keys_dir: Path,
                                                                   tmp_path: Path) -> None:
    async def session(client: Client) -> None:
        assert tool_names(await client.list_tools()) == ["ask_bob"]
        answered = await client.call_tool("ask_bob", {"message": "through the keys"})
        assert isinstance(answered, types.CallToolResult)
        assert not answered.is_error and text_of(answered).startswith("through the keys (from ")

    argv = mcp_serve_argv(keyed_crew, "--keys", str(keys_dir), "--key",
                          str(keys_dir / "crew.key_secret"))
    over_stdio(argv, tmp_path / "mcp-serve.log", session)


def test_with_a_key_the_broker_does_not_know_it_stops_with_one_line(keyed_crew: str, keys_dir: Path,
                                                                    tmp_path: Path) -> None:
    stranger = tmp_path / "stranger"
    assert CliRunner().invoke(main, ["keys", "new", "crew", "--robot", "*", "--dir",
                                     str(stranger)]).exit_code == 0
    argv = mcp_serve_argv(keyed_crew, "--keys", str(keys_dir), "--key",
                          str(stranger / "crew.key_secret"))
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    # 69, as every CLI that finds no broker to welcome it (a robotd, a service, exits 75 instead)
    assert (done.returncode, done.stdout) == (69, ""), done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "the broker refused this client's CURVE key" in last, done.stderr
    assert "Traceback" not in done.stderr
