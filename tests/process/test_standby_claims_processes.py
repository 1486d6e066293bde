"""A standby takeover whose backup missed the owners: members say what they hold. Real
processes: a pair, two robotd instances of one name, `any` requests in flight.

The backup is stopped (SIGSTOP) while 200 requests of 16 KB go through the primary, so the
stream of the primary's commits outgrows what the sockets buffer for it and the backup never
gets the later ones: which instance had each message is on the primary only, as it is for the
last commits before any crash now that a hand-out waits for no ack of its owner. The primary is
then killed -9 and the backup resumed. Every request must still be answered, and each run once:
the two instances, known to the backup as members, tell it at their HELLO which messages they
had, and the backup hands nothing to the other instance before they have."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from robotlab import bus
from tests.process.conftest import broker_argv
from tests.process.test_standby_failover_processes import OPTIONS, lines, live_at
from tests.waiting import wait_until

pytestmark = pytest.mark.process

MESSAGES = 200
PAD = "x" * 16_000


def pids(replies: list) -> set[str]:
    return {str(r.content).rsplit(" (from ", 1)[1].rstrip(")") for r in replies}


def start_pair(processes, folder: Path) -> dict:
    """A primary at a.sock and a backup at b.sock, the backup passive behind it."""
    brokers = {}
    for me, other, role in (("a", "b", "primary"), ("b", "a", "backup")):
        standby = ["--standby", role, "--state-bind", f"ipc://{folder}/{me}.state", "--peer",
                   f"ipc://{folder}/{other}.state"]
        brokers[role] = processes.start(
            broker_argv(f"ipc://{folder}/{me}.sock", *standby, "--journal",
                        str(folder / f"{me}.db"), *OPTIONS), name=role)
    wait_until(lambda: "-> passive" in brokers["backup"].output(), timeout=15,
               message="the backup follows the primary")
    return brokers


def test_a_takeover_that_missed_the_owners_still_runs_every_request_once(processes,
                                                                         tmp_path: Path) -> None:
    folder, runs = Path(tempfile.mkdtemp(prefix="rl-")), tmp_path / "runs"
    brokers = start_pair(processes, folder)
    primary, backup = brokers["primary"], brokers["backup"]
    a, b = f"ipc://{folder}/a.sock", f"ipc://{folder}/b.sock"
    robotd = [sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker", f"{a},{b}",
              "--max-inflight", "1000"]
    pool = [processes.start([*robotd, "--handler", "handlers:counted_long"],
                            env={"RUNS": str(runs)}, name=f"bob-{n}")
            for n in (1, 2)]
    wait_until(lambda: live_at(a, "bob") == 2, timeout=30,
               message="two instances of bob on the primary")
    with bus.connect(f"{a},{b}", name="alice") as alice:
        # Given both instances handed `any` work while the backup follows: it knows them as members
        warm: list = []

        def both_answered() -> bool:
            asked = [alice.send_request("bob", "warm", any=True) for _ in range(4)]
            warm.extend(t.reply(30) for t in asked)
            return pids(warm) == {str(p.pid) for p in pool}

        wait_until(both_answered, timeout=30, message="both instances answered")
        before = len(lines(runs))

        # When the backup stops reading and 200 requests of 16 KB go out through the primary
        os.kill(backup.pid, signal.SIGSTOP)
        try:
            trackers = [alice.send_request("bob", f"{i} {PAD}", any=True) for i in range(MESSAGES)]
            wait_until(lambda: len(lines(runs)) >= before + 20, timeout=30,
                       message="the pool has worked through some")
            # And the primary is killed -9, and the backup goes on
            os.kill(primary.pid, signal.SIGKILL)
            primary.popen.wait(5)
        finally:
            os.kill(backup.pid, signal.SIGCONT)
        unanswered = sum(1 for t in trackers if not t._replied.is_set())
        assert unanswered > 50, "the primary died too late to leave work unsettled"

        # Then the backup takes over, asks the members, and every request is answered, each run once
        replies = [t.reply(90) for t in trackers]
    assert [str(r.content).split(" ", 1)[0] for r in replies] == [str(i) for i in range(MESSAGES)]
    ran = Counter(lines(runs))
    assert len(ran) == before + MESSAGES and set(ran.values()) == {1}, ran.most_common(3)
    assert "taking over as the active broker" in backup.output()
    assert "2 members (1 names) may hold messages sent to any instance" in backup.output()
    print(f"{unanswered} of {MESSAGES} unanswered at the kill; {len(lines(runs)) - before} "
          "handler runs")
