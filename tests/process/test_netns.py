"""A robot across a network boundary: broker and robotd on two test hosts (network namespaces).

The namespaces and the veth pair between them are made by the test itself and removed after;
traffic only flows between them. Needs root and iproute2; skipped where namespaces cannot be
made (an unprivileged container), with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.waiting import wait_until

pytestmark = pytest.mark.process


@dataclass(frozen=True)
class Hosts:
    """Two namespaces joined by a veth pair: the broker's host and the robot's host."""

    broker_ns: str
    robot_ns: str
    broker_ip: str

    def argv(self, ns: str, *command: str) -> list[str]:
        return ["ip", "netns", "exec", ns, *command]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to make network namespaces")
    tag = f"{os.getpid() % 100_000}"
    net = f"10.213.{os.getpid() % 250}"
    a, b = f"rl-a{tag}", f"rl-b{tag}"
    try:
        _ip("netns", "add", a)
        _ip("netns", "add", b)
        _ip("link", "add", f"rla{tag}", "type", "veth", "peer", "name", f"rlb{tag}")
        _ip("link", "set", f"rla{tag}", "netns", a)
        _ip("link", "set", f"rlb{tag}", "netns", b)
        _ip("-n", a, "addr", "add", f"{net}.1/24", "dev", f"rla{tag}")
        _ip("-n", b, "addr", "add", f"{net}.2/24", "dev", f"rlb{tag}")
        for ns, dev in ((a, f"rla{tag}"), (b, f"rlb{tag}")):
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
    except subprocess.CalledProcessError as exc:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        pytest.skip(f"cannot make network namespaces here: {exc.stderr.strip()}")
    yield Hosts(a, b, f"{net}.1")
    for ns in (a, b):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_a_robot_on_another_host_is_reached_through_the_broker(hosts: Hosts, processes) -> None:
    url = f"tcp://{hosts.broker_ip}:5555"
    py = sys.executable
    broker = processes.start(hosts.argv(hosts.broker_ns, py, "-m", "robotlab.cli", "broker", "--bind", url,
                                        "--insecure", "--heartbeat", "0.2", "--no-journal"), name="broker-netns")
    bob = processes.start(hosts.argv(hosts.robot_ns, py, "-m", "robotlab.robotd", "--name", "bob", "--broker", url,
                                     "--handler", "handlers:echo"), name="robotd-netns")

    def robots_seen_from_the_broker_host() -> list:
        done = subprocess.run(hosts.argv(hosts.broker_ns, py, "-m", "robotlab.cli", "ps", "--broker", url, "--json"),
                              capture_output=True, text=True, timeout=30, env=bob.env)
        return json.loads(done.stdout) if done.returncode == 0 else []

    rows = wait_until(robots_seen_from_the_broker_host, timeout=30, message="bob registered across the boundary")
    assert [(r["name"], r["pid"]) for r in rows] == [("bob", bob.pid)], broker.output()
    asked = subprocess.run(hosts.argv(hosts.robot_ns, py, "-m", "robotlab.cli", "send", "--to", "bob", "--broker", url,
                                      "--wait", "--timeout", "10", "across"),
                           capture_output=True, text=True, timeout=60, env=bob.env)
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.strip() == f"across (from {bob.pid})"
