"""Two test hosts: network namespaces joined by a veth pair, made by the test and removed after.

Traffic only flows between them. Needs root and iproute2; a test using :func:`hosts` is
skipped, with the reason, where namespaces cannot be made (an unprivileged container).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Hosts:
    """Two namespaces joined by a veth pair: the broker's host and the robot's host."""

    broker_ns: str
    robot_ns: str
    broker_ip: str
    robot_dev: str

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
    yield Hosts(a, b, f"{net}.1", f"rlb{tag}")
    for ns in (a, b):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def cut(hosts: Hosts) -> None:
    """Take the robot host's link down: nothing crosses until :func:`mend`."""
    _ip("-n", hosts.robot_ns, "link", "set", hosts.robot_dev, "down")


def mend(hosts: Hosts) -> None:
    """Bring the robot host's link back up."""
    _ip("-n", hosts.robot_ns, "link", "set", hosts.robot_dev, "up")
