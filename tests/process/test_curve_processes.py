"""CURVE end to end: a `robotlab broker --keys` process, robotds and CLI commands with keys."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from robotlab.cli.robotlab_cli import main
from tests.process.conftest import Processes, broker_argv, free_tcp_url

pytestmark = pytest.mark.process


@pytest.fixture
def keys_dir(tmp_path: Path) -> Path:
    """Keys made with the CLI: the broker's, bob's (only bob), the CLI's own (any name, admin), and
    boss's (boss and the children it spawns, boss-*)."""
    folder = tmp_path / "keys"
    runner = CliRunner()
    for argv in (["broker"], ["bob", "--robot", "bob"],
                 ["robotlab", "--robot", "*", "--role", "admin"],
                 ["boss", "--robot", "boss", "--robot", "boss-*"]):
        result = runner.invoke(main, ["keys", "new", *argv, "--dir", str(folder)])
        assert result.exit_code == 0, result.output
    return folder


@pytest.fixture
def keyed_broker(processes: Processes, keys_dir: Path) -> str:
    """A broker process run with --keys on loopback TCP; its URL."""
    url = free_tcp_url()
    processes.keep(broker_argv(url, "--keys", str(keys_dir)),
                   lambda proc: "listening on" in proc.output(), name="broker")
    return url


def robotd_argv(url: str, name: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", url, "--handler",
            "handlers:echo", *extra]


def test_keys_cli_lists_what_it_made(keys_dir: Path) -> None:
    result = CliRunner().invoke(main, ["keys", "list", "--dir", str(keys_dir), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: (row["robots"], row["roles"]) for row in json.loads(result.output)}
    assert rows == {"bob": ("bob", "robot"), "boss": ("boss,boss-*", "robot"), "broker": ("", ""),
                    "robotlab": ("*", "admin,robot")}
    refused = CliRunner().invoke(main, ["keys", "new", "carol", "--dir", str(keys_dir)])
    assert refused.exit_code == 64 and "--robot" in refused.output


def test_an_authorized_client_talks_to_a_keyed_robotd(processes: Processes, keyed_broker: str,
                                                      keys_dir: Path) -> None:
    bob = processes.keep(robotd_argv(keyed_broker, "bob", "--keys", str(keys_dir)),
                         lambda proc: "ready" in proc.output(), name="robotd-bob")
    runner = CliRunner(env={"ROBOT_LAB_KEYS": str(keys_dir)})
    result = runner.invoke(main, ["send", "--to", "bob", "--broker", keyed_broker, "--wait",
                                  "hello"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"hello (from {bob.pid})"
    ps = runner.invoke(main, ["ps", "--broker", keyed_broker, "--json"])
    assert [row["name"] for row in json.loads(ps.output)] == ["bob"]


def test_a_robotd_with_an_unknown_key_exits_75_saying_its_key_was_not_accepted(
        processes: Processes, keyed_broker: str, keys_dir: Path, tmp_path: Path) -> None:
    # 75, not 78: authorizing the key on the broker's host (and a SIGHUP) fixes it without
    # touching this robot, so a service manager should keep trying.
    stranger = tmp_path / "stranger"
    assert CliRunner().invoke(main, ["keys", "new", "bob", "--dir", str(stranger), "--robot",
                                     "bob"]).exit_code == 0
    (stranger / "broker.key").write_bytes((keys_dir / "broker.key").read_bytes())
    proc = processes.start(robotd_argv(keyed_broker, "bob", "--keys", str(stranger),
                                       "--connect-timeout", "1"))
    assert proc.popen.wait(15) == 75
    assert "the broker refused this client's CURVE key" in proc.output()


def test_a_key_for_bob_cannot_hello_as_alice(processes: Processes, keyed_broker: str,
                                             keys_dir: Path) -> None:
    started = time.monotonic()
    proc = processes.start(robotd_argv(keyed_broker, "alice", "--keys", str(keys_dir),
                                       "--key", str(keys_dir / "bob.key_secret"),
                                       "--connect-timeout", "10"))
    assert proc.popen.wait(15) == 78
    assert time.monotonic() - started < 8  # refused at once, not after 10 s of retried HELLOs
    assert "refused 'alice' (forbidden)" in proc.output() and "may use: bob" in proc.output()


def test_a_robot_key_cannot_list_ps_or_read_the_dlq(keyed_broker: str, keys_dir: Path) -> None:
    from robotlab import bus
    from robotlab.errors import BusError

    runner = CliRunner(env={"ROBOT_LAB_KEYS": str(keys_dir)})
    assert runner.invoke(main, ["send", "--to", "nobody", "--broker", keyed_broker,
                                "secret"]).exit_code == 69
    # Given bob's key, joined as bob (the only name it may use)
    with bus.connect(keyed_broker, name="bob", keys=bus.KeyConfig.load(keys_dir, "bob")) as bob:
        for op in ("ps", "stats", "dlq.list", "dlq.purge", "dlq.replay"):
            with pytest.raises(BusError, match=f"forbidden: '{op}' needs an admin key"):
                bob.admin(op, dlq_id="dl-1")
    # Then the letter is still there, body and all, for the admin key only
    listed = runner.invoke(main, ["dlq", "list", "--broker", keyed_broker, "--json"])
    assert [row["content"] for row in json.loads(listed.output)] == ["secret"]


def test_keys_go_all_the_way_down_to_spawned_children(keyed_broker: str, keys_dir: Path,
                                                      monkeypatch) -> None:
    from robotlab import ConfigError, Robot
    from robotlab.robot.spawn import stop_fork_server
    from robotlab.testing import serve_script

    # Given only $ROBOT_LAB_KEYS: build(bus=URL) finds boss.key_secret there by the robot's name
    monkeypatch.setenv("ROBOT_LAB_KEYS", str(keys_dir))
    with serve_script([{"content": "from the kid"}]) as api:
        boss = Robot(name="boss", bus=keyed_broker, model="openai/scripted", api_base=api)
        try:
            # When boss spawns a child named under its key's names: it joins with boss's key
            kid = boss.spawn(name="boss-kid", system_prompt="You help.", timeout=20)
            assert kid.run("hi").reply == "from the kid"
            # And a child named outside them is refused at once, naming the reason
            with pytest.raises(ConfigError, match="may not use the robot name .stranger."):
                boss.spawn(name="stranger", timeout=20)
            kid.stop()
        finally:
            boss.leave_bus()
            # The fork server took this test's $ROBOT_LAB_KEYS into its environment: end it, so
            # later tests' children do not find keys there.
            stop_fork_server()


def test_a_client_without_keys_is_told_the_broker_requires_them(keyed_broker: str) -> None:
    # told at once: the minute given to find a broker would change nothing
    result = CliRunner().invoke(main, ["send", "--to", "bob", "--broker", keyed_broker,
                                       "--timeout", "60", "hi"])
    assert result.exit_code == 69
    assert (f"the broker at {keyed_broker} refused this client's handshake: this broker requires "
            "CURVE keys and this client has none") in result.output
