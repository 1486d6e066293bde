"""A pool of two across standby failovers, driven by hypothesis against a reference model.

The machine of tests/unit/bus/test_pool_stateful.py (every request answered once, with its own
answer, and run exactly once, on whichever instance had it), with the broker a standby pair of
real processes: between any two steps the active one may be killed with SIGKILL, whatever it
was doing; the passive one takes over on the journal it was sent, and the killed one comes back
as the passive one, taking the active one's journal in place of its own.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from tests.unit.bus.test_pool_stateful import PoolMachine
from tests.waiting import wait_until

pytestmark = pytest.mark.process

ROLES = ("primary", "backup")


class Pair:
    """A primary and a backup broker process on ipc:// sockets in ``folder``, each with a
    journal."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: dict[str, subprocess.Popen] = {}
        self.active = "primary"
        self.restarts = itertools.count()
        for role in ROLES:
            self.start(role)
        wait_until(lambda: "-> passive" in self.log("backup"), timeout=30,
                   message="the backup passive")

    @property
    def url(self) -> str:
        return ",".join(f"ipc://{self.folder}/{role}.sock" for role in ROLES)

    def log(self, role: str) -> str:
        path = self.folder / f"{role}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self, role: str) -> None:
        peer = ROLES[1 - ROLES.index(role)]
        argv = [sys.executable, "-m", "robotlab.cli", "broker", "--bind",
                f"ipc://{self.folder}/{role}.sock",
                "--standby", role, "--state-bind", f"ipc://{self.folder}/{role}.state",
                "--peer", f"ipc://{self.folder}/{peer}.state", "--heartbeat", "0.1",
                "--liveness", "20", "--hold", "30", "--ack-timeout", "60",
                "--journal", str(self.folder / f"{role}.db")]
        with open(self.folder / f"{role}.log", "w") as log:  # each start writes a fresh log
            self.procs[role] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def fail_over(self) -> None:
        """Kill -9 the active broker; wait for the other to serve, then start the killed one
        again and wait until it is passive on the active one's journal."""
        killed, survivor = self.active, ROLES[1 - ROLES.index(self.active)]
        os.kill(self.procs[killed].pid, signal.SIGKILL)
        self.procs[killed].wait()
        wait_until(lambda: "taking over as the active broker" in self.log(survivor)
                   or "-> active" in self.log(survivor), timeout=30,
                   message=f"the {survivor} taking over")
        self.active = survivor
        self.start(killed)
        wait_until(lambda: "took the active peer's whole journal" in self.log(killed)
                   and "-> passive" in self.log(killed),
                   timeout=30, message=f"the {killed} back as passive, on the {survivor}'s journal")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class PoolFailoverMachine(PoolMachine):
    """A standby pair of broker processes, two instances of ``w``, one sender."""

    def __init__(self) -> None:
        super().__init__()
        wait_until(lambda: {row["instance"] for row in self.alice.admin("ps")} >= {"w-0", "w-1"},
                   timeout=30, message="both instances of w on the bus")

    def _broker(self) -> Pair:  # type: ignore[override]
        pair = Pair(self.folder)
        self.url = pair.url  # the clients the machine makes next connect to the pair
        return pair

    @rule(burst=st.integers(1, 20))
    def send(self, burst: int) -> None:  # type: ignore[override]
        for number in itertools.islice(self.numbers, burst):
            self.sent[number] = self.alice.send_request("w", number, any=True)

    @precondition(lambda self: any(not tracker._replied.is_set() for tracker in self.sent.values()))
    @rule()
    def restart_broker(self) -> None:
        # Only with requests open: a failover with nothing in flight proves nothing
        self.broker.fail_over()


TestPoolFailoverMachine = pytest.mark.timeout(600)(PoolFailoverMachine.TestCase)
TestPoolFailoverMachine.settings = settings(phases=[Phase.explicit, Phase.reuse, Phase.generate],
                                            max_examples=4, stateful_step_count=15, deadline=None,
                                            suppress_health_check=[HealthCheck.too_slow])
