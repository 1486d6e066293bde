"""A pool of two across standby failovers, driven by hypothesis against a reference model.

The machine of tests/unit/bus/test_pool_stateful.py (every request answered once, with its own
answer, and run exactly once, on whichever instance had it), with the broker a standby pair of
real processes: between any two steps with requests open the active one may be killed with
SIGKILL, whatever it was doing, and the passive one takes over on the journal it was sent. The
killed one stays down for any number of steps (the survivor serves alone, its receipts
unreplicated) and comes back, by a rule of its own, as the passive one, taking the active one's
journal in place of its own, sent and finished work included.

No rule waits for open requests to be handed out first, as the restart of the machine above
does: at a takeover the members say which ``any`` messages they hold, and nothing goes to
another instance before they have (broker/claims.py).
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
        self.down: str | None = None
        """The role killed and not started again yet, if any."""
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

    def kill_active(self) -> None:
        """Kill -9 the active broker; wait for the other to take over (at a client's HELLO)."""
        killed, survivor = self.active, ROLES[1 - ROLES.index(self.active)]
        os.kill(self.procs[killed].pid, signal.SIGKILL)
        self.procs[killed].wait()
        # the survivor started passive with a log of its own: this line is its first takeover
        wait_until(lambda: "taking over as the active broker" in self.log(survivor), timeout=30,
                   message=f"the {survivor} taking over")
        self.active, self.down = survivor, killed

    def bring_back(self) -> None:
        """Start the killed broker again; wait until it is passive on the active one's journal."""
        role, self.down = self.down, None
        assert role is not None, "no broker of the pair is down"
        self.start(role)
        try:
            wait_until(lambda: "took the active peer's whole journal" in self.log(role)
                       and "-> passive" in self.log(role),
                       timeout=30,
                       message=f"the {role} back as passive, on the {self.active}'s journal")
        except AssertionError as exc:  # what each broker said, to tell why
            raise AssertionError(f"{exc}\n--- {role}'s log ---\n{self.log(role)[-4000:]}\n--- "
                                 f"{self.active}'s log ---\n{self.log(self.active)[-4000:]}"
                                 ) from None

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

    @precondition(lambda self: self.broker.down is None
                  and any(not tracker._replied.is_set() for tracker in self.sent.values()))
    @rule()
    def restart_broker(self) -> None:
        # In place of the machine's restart, a failover. Only with requests open, since one
        # with nothing in flight proves nothing; and only with both up: with the other one down
        # too, it is an outage, not a failover.
        self.broker.kill_active()

    @precondition(lambda self: self.broker.down is not None)
    @rule()
    def bring_back(self) -> None:
        self.broker.bring_back()


TestPoolFailoverMachine = pytest.mark.timeout(600)(PoolFailoverMachine.TestCase)
TestPoolFailoverMachine.settings = settings(phases=[Phase.explicit, Phase.reuse, Phase.generate],
                                            max_examples=6, stateful_step_count=20, deadline=None,
                                            suppress_health_check=[HealthCheck.too_slow])
