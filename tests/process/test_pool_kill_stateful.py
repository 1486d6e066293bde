"""A pool of two across broker kill -9s, driven by hypothesis against a reference model.

The machine of tests/unit/bus/test_pool_stateful.py (every request answered once, with its own
answer, and run exactly once, on whichever instance had it), with the broker a real process
killed with SIGKILL between any two steps, whatever it was doing: a request accepted and not
yet written, handed out and not yet settled, answered and not yet passed on. Requests go out
in bursts and the kill waits for nothing, so hypothesis finds the moments a graceful restart
never shows.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule

from tests.process.conftest import ping
from tests.unit.bus.test_pool_stateful import WORKERS, PoolMachine
from tests.waiting import wait_until

pytestmark = pytest.mark.process


class BrokerProcess:
    """``robotlab broker`` as a process on the machine's journal; ``stop`` is a kill -9."""

    def __init__(self, url: str, journal: str) -> None:
        argv = [sys.executable, "-m", "robotlab.cli", "broker", "--bind", url, "--heartbeat", "0.1",
                "--liveness", "20", "--hold", "30", "--ack-timeout", "60", "--journal", journal]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: self.proc.poll() is not None or ping(url), timeout=30,
                   message="the broker answering")
        assert self.proc.poll() is None, "the broker exited at start"

    def stop(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


class PoolKillMachine(PoolMachine):
    """One broker process on a journal, two instances of ``w``, one sender."""

    def __init__(self) -> None:
        super().__init__()
        # Both on the bus before the first send; an admin reply waits for the journal's commit,
        # so from here on every broker knows the name ``w`` and holds messages for it.
        wait_until(lambda: {row["instance"] for row in self.alice.admin("ps")} >= set(WORKERS),
                   timeout=30, message="both instances of w on the bus")

    def _broker(self) -> BrokerProcess:  # type: ignore[override]
        return BrokerProcess(self.url, str(self.folder / "broker.db"))

    @rule(burst=st.integers(1, 30))
    def send(self, burst: int) -> None:
        # A burst, so a kill finds requests accepted, handed out and answered within the same
        # few milliseconds: the journal's commit interval, where what was done and what was
        # written can differ.
        for number in itertools.islice(self.numbers, burst):
            self.sent[number] = self.alice.send_request("w", number, any=True)

    @rule()
    def restart_broker(self) -> None:
        self.broker.stop()
        self.broker = self._broker()


TestPoolKillMachine = pytest.mark.timeout(600)(PoolKillMachine.TestCase)
TestPoolKillMachine.settings = settings(phases=[Phase.explicit, Phase.reuse, Phase.generate],
                                        max_examples=6, stateful_step_count=20, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
