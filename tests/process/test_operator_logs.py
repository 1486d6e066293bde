"""What an operator reads: the broker's INFO lines, key refusals by owner, SIGHUP key rotation,
an unreadable key. Real broker and robotd processes throughout."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from robotlab.cli.robotlab_cli import main
from tests.process.conftest import Processes, broker_argv, ping
from tests.process.test_curve_processes import free_tcp_url, keyed_broker, keys_dir, robotd_argv  # noqa: F401
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def lines(proc, pattern: str) -> list[str]:
    return [line for line in proc.output().splitlines() if re.search(pattern, line)]


def test_joins_leaves_silences_and_dead_letters_are_one_info_line_each(
        processes: Processes, endpoint: str) -> None:
    # The default liveness (3 x 0.2 s), which the silence line below names; the last flag wins.
    broker = processes.start(broker_argv(endpoint, "--liveness", "3"), name="broker")
    wait_until(lambda: ping(endpoint), timeout=15, message="broker answers")
    bob = processes.start(robotd_argv(endpoint, "bob"), name="robotd-bob")
    carol = processes.start(robotd_argv(endpoint, "carol"), name="robotd-carol")
    wait_until(lambda: len(lines(broker, r"INFO peer (bob|carol) \(\w+\) joined as robot$")) == 2,
               timeout=20, message="two joins logged")
    assert CliRunner().invoke(main, ["send", "--to", "ghost", "--broker", endpoint,
                                     "boo"]).exit_code == 69
    wait_until(lambda: lines(
        broker, r"INFO dead letter dl-1: message \S+ from robotlab-send to ghost \(undeliverable"),
               timeout=10, message="the dead letter logged")
    bob.popen.send_signal(signal.SIGTERM)
    assert bob.popen.wait(15) == 0
    wait_until(lambda: lines(broker, r"INFO peer bob \(\w+\) left$"), timeout=10,
               message="bob's leave logged")
    carol.popen.send_signal(signal.SIGSTOP)  # alive but mute: the broker's liveness check finds it
    try:
        wait_until(lambda: lines(
            broker, r"INFO peer carol \(\w+\) went silent \(no traffic for 0.6s\)$"),
                   timeout=10, message="carol's silence logged")
    finally:
        carol.popen.kill()
    assert len(lines(broker, r"peer bob .* joined")) == 1 and len(
        lines(broker, r"dead letter dl-1")) == 1


def test_json_logs_are_one_object_a_line(processes: Processes, endpoint: str) -> None:
    import json

    broker = processes.start(broker_argv(endpoint, "--log-format", "json"), name="broker")
    wait_until(lambda: "listening on" in broker.output(), timeout=15, message="broker listens")
    entries = [json.loads(line) for line in broker.output().splitlines() if line.startswith("{")]
    assert any(e["level"] == "INFO" and e["logger"] == "robotlab.broker"
               and "listening on" in e["message"]
               for e in entries), broker.output()


def test_refusals_name_the_keys_owner_never_the_key(
        processes: Processes, keys_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    url = free_tcp_url()
    broker = processes.start(broker_argv(url, "--keys", str(keys_dir)), name="broker")
    wait_until(lambda: "listening on" in broker.output(), timeout=15,
               message="keyed broker listens")
    # bob's key asking for alice's name
    alice = processes.start(robotd_argv(url, "alice", "--keys", str(keys_dir), "--key",
                                        str(keys_dir / "bob.key_secret")))
    assert alice.popen.wait(15) == 78
    wait_until(lambda: lines(
        broker, r"INFO refused HELLO as 'alice' with bob's key: this key may not use"),
               timeout=5, message="the refusal names bob")
    # a key the broker never authorized
    stranger = tmp_path / "stranger"
    assert CliRunner().invoke(main, ["keys", "new", "eve", "--dir", str(stranger), "--robot",
                                     "eve"]).exit_code == 0
    (stranger / "broker.key").write_bytes((keys_dir / "broker.key").read_bytes())
    processes.start(robotd_argv(url, "eve", "--keys", str(stranger)), name="robotd-eve")
    wait_until(lambda: lines(broker, r"INFO refused a connection from 127\.0\.0\.1: its CURVE key "
                                     r"is not in .*authorized"), timeout=15,
               message="the unknown key's refusal logged")
    public_keys = re.findall(r'public-key = "([^"]+)"', (stranger / "eve.key").read_text()
                             + (keys_dir / "bob.key").read_text())
    assert public_keys and not any(key in broker.output() for key in public_keys)


def test_sighup_rotates_keys_without_a_restart(
        processes: Processes, keys_dir: Path) -> None:  # noqa: F811
    url = free_tcp_url()
    broker = processes.start(broker_argv(url, "--keys", str(keys_dir)), name="broker")
    wait_until(lambda: "listening on" in broker.output(), timeout=15,
               message="keyed broker listens")
    # Given carol's key, made after the broker started: carol waits, refused at the handshake
    assert CliRunner().invoke(main, ["keys", "new", "carol", "--dir", str(keys_dir), "--robot",
                                     "carol"]).exit_code == 0
    carol = processes.start(robotd_argv(url, "carol", "--keys", str(keys_dir)), name="robotd-carol")
    wait_until(lambda: lines(broker, "refused a connection"), timeout=15,
               message="carol refused before the reload")
    # When the broker is told to re-read authorized/
    broker.popen.send_signal(signal.SIGHUP)
    # Then it names the keys now accepted, and carol joins without either process restarting
    wait_until(lambda: lines(broker, r"INFO reloaded authorized keys: (\w+, )*carol(, \w+)*$"),
               timeout=10, message="the reload logged")
    wait_until(lambda: lines(broker, r"peer carol \(\w+\) joined"), timeout=40,
               message="carol joined after SIGHUP")
    assert carol.popen.poll() is None and broker.popen.poll() is None
    # And a key removed from authorized/ is refused at its next handshake
    (keys_dir / "authorized" / "carol.key").unlink()
    broker.popen.send_signal(signal.SIGHUP)
    wait_until(lambda: len(lines(broker, "reloaded authorized keys")) == 2, timeout=10,
               message="second reload")
    assert "carol" not in lines(broker, "reloaded authorized keys")[-1]
    late = processes.start(robotd_argv(url, "carol", "--keys", str(keys_dir), "--connect-timeout",
                                       "2"))
    assert late.popen.wait(20) == 75


def test_an_unreadable_key_is_one_line_naming_the_file_and_the_fix(
        keys_dir: Path) -> None:  # noqa: F811
    # Root reads anything; without the two DAC capabilities it is refused like any user.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv, to run the broker without the capability to read any "
                    "file")
    os.chmod(keys_dir / "broker.key_secret", 0o000)
    argv = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m",
            "robotlab.cli", "broker", "--bind", free_tcp_url(), "--keys", str(keys_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 78, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert (f"cannot read the key {keys_dir / 'broker.key_secret'} (Permission "
            "denied) as uid 0") in done.stderr
    assert "LoadCredential=" in done.stderr


def test_a_key_in_a_closed_folder_is_one_line_too(
        keys_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    # As a credential whose folder systemd did not open to the service's user: stat() fails.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv, to run the broker without the capability to read any "
                    "file")
    closed = tmp_path / "credentials"
    closed.mkdir()
    shutil.copy(keys_dir / "broker.key_secret", closed / "broker.key_secret")
    closed.chmod(0o000)
    argv = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m",
            "robotlab.cli", "broker", "--bind", free_tcp_url(), "--keys", str(keys_dir), "--key",
            str(closed / "broker.key_secret")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    closed.chmod(0o700)
    assert done.returncode == 78, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"cannot read the key {closed / 'broker.key_secret'} (Permission denied)" in done.stderr


def test_keys_list_shows_authorized_keys_whose_secret_is_elsewhere(
        keys_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    other_host = tmp_path / "other"
    assert CliRunner().invoke(main, ["keys", "new", "dave", "--dir", str(other_host), "--robot",
                                     "dave"]).exit_code == 0
    (keys_dir / "authorized" / "dave.key").write_bytes((other_host / "dave.key").read_bytes())
    import json

    result = CliRunner().invoke(main, ["keys", "list", "--dir", str(keys_dir), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: (row["robots"], row["authorized"], row["secret"])
            for row in json.loads(result.output)}
    assert rows["dave"] == ("dave", "yes", "elsewhere")
    assert rows["bob"] == ("bob", "yes", "here")
