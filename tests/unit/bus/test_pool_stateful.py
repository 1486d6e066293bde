"""A pool of two instances across broker restarts, driven by hypothesis against a reference model.

Alice sends requests to any one instance of ``w``; each instance works on one at a time and
finishes when a rule says so; between any two steps the broker may be stopped and started again
on its journal. The reference model is the promise: every request is answered once, with its
own answer, and each ran exactly once, on whichever instance had it, however the sends,
finishes and restarts interleave.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from robotlab import bus
from robotlab.bus import BrokerConfig, BusClient, EmbeddedBroker
from tests.waiting import wait_until

WORKERS = ("w-0", "w-1")


class PoolMachine(RuleBasedStateMachine):
    """One broker on a journal, two instances of ``w``, one sender."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="rl-pool-"))
        self.url = f"ipc://{self.folder}/broker.sock"
        self.broker = self._broker()
        self.lock = threading.Lock()
        self.runs: Counter[int] = Counter()
        self.gates: dict[str, threading.Event] = {}
        """The gate each instance's running request waits on: set, it answers."""
        self.workers = [self._worker(instance) for instance in WORKERS]
        self.alice = bus.connect(self.url, name="alice", instance="alice-1")
        self.sent: dict[int, Any] = {}
        self.numbers = itertools.count()

    def _broker(self) -> EmbeddedBroker:
        config = BrokerConfig(heartbeat=0.1, liveness=20, hold=30.0, ack_timeout=60.0,
                              journal=str(self.folder / "broker.db"))
        return EmbeddedBroker(url=self.url, config=config).start()

    def _worker(self, instance: str) -> BusClient:
        def work(message: Any) -> int:
            gate = threading.Event()
            with self.lock:
                self.runs[message.content] += 1
                self.gates[instance] = gate
            gate.wait(60)
            return int(message.content)

        return BusClient(self.url, name="w", instance=instance,
                         role="robot").on_message(work).start()

    @rule()
    def send(self) -> None:
        number = next(self.numbers)
        self.sent[number] = self.alice.send_request("w", number, any=True)

    @rule(index=st.integers(0, 1))
    def finish(self, index: int) -> None:
        with self.lock:
            gate = self.gates.pop(WORKERS[index], None)
        if gate is not None:
            gate.set()

    @rule()
    def restart_broker(self) -> None:
        # Once the broker has handed out every request not answered yet: the restart then finds
        # each one owned by the instance working on it or holding it in its queue.
        wait_until(self._all_handed_out, timeout=10, message="every open request handed out")
        self.broker.stop()
        self.broker = self._broker()

    def _all_handed_out(self) -> bool:
        records = list(self.broker._broker.deliveries.active.values())
        open_ids = {tracker.id for tracker in self.sent.values() if not tracker._replied.is_set()}
        handed = {record.header["id"] for record in records if record.handed_to}
        return open_ids <= handed

    def _finish_all(self) -> bool:
        with self.lock:
            gates, self.gates = list(self.gates.values()), {}
        for gate in gates:
            gate.set()
        return all(tracker._replied.is_set() for tracker in self.sent.values())

    def teardown(self) -> None:
        try:
            wait_until(self._finish_all, timeout=60, message="every request answered")
            answers = {number: tracker.reply(1).content for number, tracker in self.sent.items()}
            assert answers == {number: number for number in self.sent}
            runs = {number: self.runs[number] for number in self.sent}
            assert runs == dict.fromkeys(self.sent, 1), self.runs
        finally:
            for client in (self.alice, *self.workers):
                client.close(drain=0)
            self.broker.stop()
            shutil.rmtree(self.folder, ignore_errors=True)


TestPoolMachine = pytest.mark.timeout(300)(PoolMachine.TestCase)
TestPoolMachine.settings = settings(max_examples=12, stateful_step_count=25, deadline=None,
                                    suppress_health_check=[HealthCheck.too_slow])
