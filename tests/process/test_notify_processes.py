"""sd_notify from real daemons: a real AF_UNIX datagram socket plays systemd's NOTIFY_SOCKET."""

from __future__ import annotations

import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.process.conftest import Processes, broker_argv
from tests.waiting import wait_until

pytestmark = pytest.mark.process


@dataclass
class Manager:
    """Collects what the daemons tell their service manager."""

    sock: socket.socket
    messages: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        # 0.4 s: short enough that a test sees several feeds, long enough for a loaded machine.
        return {"NOTIFY_SOCKET": self.sock.getsockname(), "WATCHDOG_USEC": "400000"}

    def read(self) -> list[str]:
        while True:
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except BlockingIOError:
                return self.messages

    def saw(self, text: str) -> bool:
        return any(text in m for m in self.read())


@pytest.fixture
def manager() -> Iterator[Manager]:
    folder = tempfile.mkdtemp(prefix="rl-n-")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(f"{folder}/notify")
    sock.setblocking(False)
    yield Manager(sock)
    sock.close()


def test_a_robotd_is_ready_only_once_welcomed_and_feeds_the_watchdog(
        processes: Processes, endpoint: str, manager: Manager) -> None:
    bob = processes.start([sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker",
                           endpoint, "--handler",
                           "handlers:echo"], env=manager.env, name="robotd-bob")
    wait_until(lambda: manager.saw(f"STATUS=waiting for the broker at {endpoint}"), timeout=20,
               message="robotd says it waits")
    wait_until(lambda: manager.saw("WATCHDOG=1"), timeout=10, message="fed while waiting")
    assert not manager.saw("READY=1"), manager.messages
    processes.start(broker_argv(endpoint), env=manager.env, name="broker")
    wait_until(lambda: manager.saw("READY=1\nSTATUS=listening on"), timeout=20,
               message="the broker is ready")
    wait_until(lambda: manager.saw("READY=1\nSTATUS=bob (instance"), timeout=20,
               message="bob is ready")
    ready_at = next(i for i, m in enumerate(manager.messages)
                    if m.startswith("READY=1\nSTATUS=bob"))
    wait_until(lambda: any(m.startswith("WATCHDOG=1\nSTATUS=bob") and "connected to" in m
                           for m in manager.read()[ready_at:]), timeout=10,
               message="bob feeds its watchdog")
    assert bob.popen.poll() is None


def test_the_broker_feeds_its_watchdog_with_a_status(processes: Processes, endpoint: str,
                                                     manager: Manager) -> None:
    processes.start(broker_argv(endpoint), env=manager.env, name="broker")
    wait_until(lambda: manager.saw("WATCHDOG=1\nSTATUS=listening on"), timeout=20,
               message="the broker feeds")
    assert any(m.startswith("READY=1") for m in manager.messages)
    assert any("members" in m and "dead letters" in m for m in manager.messages
               if m.startswith("WATCHDOG=1"))
