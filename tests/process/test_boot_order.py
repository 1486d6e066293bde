"""Daemons that boot in any order: a robotd waits for its broker, a broker for its address.

Real processes throughout: a robotd started before any broker, a broker asked to bind an
address this host does not have (yet), and IPv6 loopback.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from robotlab.cli.robotlab_cli import main
from tests.process.conftest import Processes, broker_argv, live, ping
from tests.waiting import wait_until

pytestmark = pytest.mark.process

# TEST-NET-1 (RFC 5737): documentation addresses, never configured on a real host.
ABSENT_ADDRESS = "192.0.2.1"


def robotd_argv(url: str, name: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", url, "--handler",
            "handlers:echo", *extra]


def test_a_robotd_started_before_its_broker_waits_then_joins(
        processes: Processes, endpoint: str) -> None:
    # Given a robotd whose broker is not up yet
    bob = processes.start(robotd_argv(endpoint, "bob"), name="robotd-bob")
    wait_until(lambda: "trying again in" in bob.output() or bob.popen.poll() is not None,
               timeout=20, message="robotd says it is waiting for the broker")
    assert bob.popen.poll() is None, bob.output()
    assert "ready" not in bob.output()
    # When the broker comes up
    processes.start(broker_argv(endpoint), name="broker")
    # Then bob joins it, and says ready only now
    wait_until(lambda: any(row["pid"] == bob.pid for row in live(endpoint, "bob")) if ping(endpoint)
               else False, timeout=40, message="bob joined the late broker")
    wait_until(lambda: "robotd bob ready" in bob.output(), timeout=5, message="bob said ready")
    result = CliRunner().invoke(main, ["send", "--to", "bob", "--broker", endpoint, "--wait",
                                       "hello"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"hello (from {bob.pid})"


def test_a_robotd_logs_one_line_per_backoff_step(processes: Processes, endpoint: str) -> None:
    bob = processes.start(robotd_argv(endpoint, "bob"), name="robotd-bob")
    wait_until(lambda: bob.output().count("trying again in") >= 3, timeout=30,
               message="three backoff steps")
    delays = [float(line.rsplit("trying again in ", 1)[1].rstrip("s"))
              for line in bob.output().splitlines() if "trying again in" in line]
    assert delays[0] < delays[1] < delays[2], delays  # doubling (with jitter), not a fixed poll


def test_a_broker_waits_for_its_bind_address_then_exits_75(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "robotlab.cli", "broker", "--bind",
            f"tcp://{ABSENT_ADDRESS}:5555", "--insecure", "--bind-timeout", "1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 75, done.stderr
    assert "cannot bind tcp://192.0.2.1:5555 yet" in done.stderr  # it retried
    last = done.stderr.strip().splitlines()[-1]
    assert "ERROR cannot bind tcp://192.0.2.1:5555 after waiting 1s: " in last
    assert "is that address configured on this host?" in last


@pytest.fixture
def netns() -> Iterator[str]:
    """A fresh network namespace with only loopback up (needs root and iproute2)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to make a network namespace")
    name = f"rl-boot{os.getpid() % 100_000}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a network namespace here: {made.stderr.strip()}")
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True, capture_output=True)
    yield name
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_a_broker_binds_once_its_address_appears(processes: Processes, netns: str) -> None:
    # Given a broker whose address is not on its host yet (as before DHCP or network-online)
    address = f"10.214.{os.getpid() % 250}.1"
    broker = processes.start(["ip", "netns", "exec", netns, sys.executable, "-m", "robotlab.cli",
                              "broker", "--bind", f"tcp://{address}:5555",
                              "--insecure"], name="broker")
    wait_until(lambda: "yet" in broker.output() or broker.popen.poll() is not None, timeout=20,
               message="the broker says it waits for its address")
    assert broker.popen.poll() is None, broker.output()
    # When the address is configured
    subprocess.run(["ip", "-n", netns, "addr", "add", f"{address}/32", "dev", "lo"], check=True,
                   capture_output=True)
    # Then the broker binds it and listens
    wait_until(lambda: "listening on" in broker.output() or broker.popen.poll() is not None,
               timeout=20, message="the broker listens once its address exists")
    assert broker.popen.poll() is None, broker.output()


def test_a_broker_binds_an_ipc_path_in_a_missing_folder_exits_78_saying_what_to_do(
        tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "robotlab.cli", "broker", "--bind",
            f"ipc://{tmp_path}/no/such/broker.sock"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 78, done.stderr
    assert "its folder does not exist" in done.stderr and "RuntimeDirectory=" in done.stderr


def _free_ipv6_port() -> int:
    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        return probe.getsockname()[1]


def test_ipv6_loopback_binds_and_a_robotd_joins_over_it(processes: Processes, start_broker) -> None:
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6")
    try:
        port = _free_ipv6_port()
    except OSError as exc:
        pytest.skip(f"no IPv6 loopback here: {exc}")
    url = f"tcp://[::1]:{port}"
    start_broker(url)
    bob = processes.start(robotd_argv(url, "bob"), name="robotd-bob")
    wait_until(lambda: "robotd bob ready" in bob.output() or bob.popen.poll() is not None,
               timeout=20, message="bob joined over IPv6")
    result = CliRunner().invoke(main, ["send", "--to", "bob", "--broker", url, "--wait", "hi"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"hi (from {bob.pid})"
