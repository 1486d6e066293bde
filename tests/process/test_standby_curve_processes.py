"""A keyed standby pair: the state sockets that carry the replicated journal are under CURVE
with the pair's broker key, so no other key (a robot's, authorized on the bus) and no keyless
socket can read the journal stream."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
import zmq
from click.testing import CliRunner

from robotlab.bus.certificates import read_certificate
from robotlab.cli.robotlab_cli import main
from tests.process.conftest import Proc, Processes, broker_argv, free_tcp_url
from tests.waiting import wait_until

pytestmark = pytest.mark.process


@pytest.fixture
def keys_dir(tmp_path: Path) -> Path:
    """The pair's broker key, bob's (only bob) and the CLI's own (any name, admin)."""
    folder = tmp_path / "keys"
    runner = CliRunner()
    for argv in (["broker"], ["bob", "--robot", "bob"],
                 ["robotlab", "--robot", "*", "--role", "admin"]):
        result = runner.invoke(main, ["keys", "new", *argv, "--dir", str(folder)])
        assert result.exit_code == 0, result.output
    return folder


def pair(processes: Processes, keys: Path, folder: Path) -> tuple[str, str, Proc, Proc]:
    """A keyed primary and backup on loopback TCP: (client URL, primary's state URL, primary,
    backup)."""
    a, b, state_a, state_b = (free_tcp_url() for _ in range(4))
    common = ("--keys", str(keys), "--hold", "30")
    primary = processes.start(broker_argv(a, "--standby", "primary", "--state-bind", state_a,
                                          "--peer", state_b,
                                          "--journal", str(folder / "a.db"), *common),
                              name="primary")
    backup = processes.start(broker_argv(b, "--standby", "backup", "--state-bind", state_b,
                                         "--peer", state_a,
                                         "--journal", str(folder / "b.db"), *common), name="backup")
    return f"{a},{b}", state_a, primary, backup


def send(url: str, keys: Path, *argv: str) -> str:
    runner = CliRunner(env={"ROBOT_LAB_KEYS": str(keys)})
    result = runner.invoke(main, ["send", "--broker", url, *argv])
    assert result.exit_code == 0, result.output
    return result.output.strip()


def test_a_keyed_pair_replicates_and_fails_over(processes: Processes, keys_dir: Path,
                                                tmp_path: Path) -> None:
    url, _, primary, backup = pair(processes, keys_dir, tmp_path)
    wait_until(lambda: "-> passive" in backup.output(), timeout=15,
               message="the backup hears the primary under CURVE")
    bob = processes.start([sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker",
                           url, "--handler", "handlers:echo", "--keys", str(keys_dir)], name="bob")
    wait_until(lambda: "ready" in bob.output(), timeout=30, message="bob on the pair")
    # An `any` request's hand-out waits for the backup's ack (--standby-sync on): it is answered
    # only if the journal stream and its acks cross the keyed state sockets
    one = send(url, keys_dir, "--to", "bob", "--any", "--wait", "--timeout", "20", "one")
    assert one == f"one (from {bob.pid})"
    assert "unreplicated" not in primary.output()
    os.kill(primary.pid, signal.SIGKILL)
    primary.popen.wait(5)
    two = send(url, keys_dir, "--to", "bob", "--wait", "--timeout", "30", "two")
    assert two == f"two (from {bob.pid})"
    assert "taking over as the active broker" in backup.output()


@pytest.mark.parametrize("key", ["bob", None], ids=["a robot's key", "no key"])
def test_no_other_key_reads_the_journal_stream(processes: Processes, keys_dir: Path, tmp_path: Path,
                                               key: str | None) -> None:
    url, state_a, primary, backup = pair(processes, keys_dir, tmp_path)
    wait_until(lambda: "-> passive" in backup.output(), timeout=15, message="the pair is up")
    context = zmq.Context.instance()
    spy = context.socket(zmq.SUB)
    spy.setsockopt(zmq.LINGER, 0)
    spy.setsockopt(zmq.SUBSCRIBE, b"")
    try:
        if key is not None:  # authorized on the bus, but not the pair's key
            public, secret = read_certificate(keys_dir / f"{key}.key_secret")
            spy.curve_publickey, spy.curve_secretkey = public, secret or b""
            spy.curve_serverkey = read_certificate(keys_dir / "broker.key")[0]
        spy.connect(state_a)
        if key is not None:
            wait_until(lambda: "refused a connection to the standby state socket"
                       in primary.output(), timeout=15, message="the primary refuses the spy's key")
        # The primary publishes its state once a heartbeat: several go by, and none reach the spy
        assert spy.poll(3000) == 0, "the spy read the standby stream"
    finally:
        spy.close(0)
