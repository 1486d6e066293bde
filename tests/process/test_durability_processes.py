"""A crew that rides through a broker killed with -9: the journal and the holds, with real
processes.

The broker keeps what it accepted in its journal and holds messages for robots it knows while
they are away, so a restart costs latency, never work: nothing is dead-lettered undeliverable,
nothing runs twice, every request is answered, and the dead-letter queue survives.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

from robotlab import bus
from robotlab.errors import Undeliverable
from tests.process.conftest import live, stop
from tests.waiting import wait_until

pytestmark = pytest.mark.process

MESSAGES = 500


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def kill_9_and_restart(broker, trackers: list, restart) -> None:
    """Kill the broker with -9 while over 100 of ``trackers`` wait for their reply, then restart
    it."""
    os.kill(broker.pid, signal.SIGKILL)
    broker.popen.wait(5)
    unanswered = sum(1 for t in trackers if not t._replied.is_set())
    assert unanswered > 100, "the broker died too late to leave work unsettled"
    restart()


def test_kill_9_of_the_broker_with_500_unsettled_messages_loses_and_repeats_none(
        endpoint: str, start_broker, processes, tmp_path: Path) -> None:
    options = ("--hold", "30", "--max-inflight", "1000", "--ack-timeout", "30")
    broker = start_broker(endpoint, *options)
    runs = tmp_path / "runs"
    bob = processes.start([sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker",
                           endpoint, "--handler", "handlers:counted", "--max-inflight",
                           "1000"], env={"RUNS": str(runs)}, name="bob")
    wait_until(lambda: live(endpoint, "bob"), timeout=15, message="bob live")
    with bus.connect(endpoint, name="alice") as alice:
        # Given a dead letter from before the restart, and 500 requests of which bob has done some
        with pytest.raises(Undeliverable) as letter:
            alice.send("nobody", "lost").wait(5)
        trackers = [alice.send_request("bob", i) for i in range(MESSAGES)]
        wait_until(lambda: len(lines(runs)) >= 50, timeout=30,
                   message="bob has worked through some")

        # When the broker is killed -9 and started again on the same journal
        kill_9_and_restart(broker, trackers, lambda: start_broker(endpoint, *options))

        # Then every request is answered by bob, each ran exactly once, and the DLQ is intact
        replies = [t.reply(90) for t in trackers]
        letters = alice.admin("dlq.list")
    assert [r.content for r in replies] == [f"{i} (from {bob.pid})" for i in range(MESSAGES)]
    ran = Counter(lines(runs))
    assert len(ran) == MESSAGES and set(ran.values()) == {1}, ran.most_common(3)
    assert [(d["dlq_id"], d["reason"],
             d["to"]) for d in letters] == [(letter.value.dlq_id, "undeliverable", "nobody")]


def test_kill_9_of_the_broker_under_a_pool_of_two_runs_each_message_once(
        endpoint: str, start_broker, processes, tmp_path: Path) -> None:
    options = ("--hold", "30", "--max-inflight", "1000", "--ack-timeout", "30")
    broker = start_broker(endpoint, *options)
    runs = tmp_path / "runs"
    pool = [processes.start([sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker",
                             endpoint, "--handler", "handlers:counted", "--max-inflight",
                             "1000"], env={"RUNS": str(runs)},
                            name=f"bob-{n}") for n in (1, 2)]
    wait_until(lambda: len(live(endpoint, "bob")) == 2, timeout=15,
               message="two instances of bob live")
    with bus.connect(endpoint, name="alice") as alice:
        # Given 500 requests, each for any one instance, of which the pool has done some
        trackers = [alice.send_request("bob", i, any=True) for i in range(MESSAGES)]
        wait_until(lambda: len(lines(runs)) >= 50, timeout=30,
                   message="the pool has worked through some")

        # When the broker is killed -9 and started again on the same journal
        kill_9_and_restart(broker, trackers, lambda: start_broker(endpoint, *options))

        # Then every request is answered, and each ran exactly once, on whichever instance had it
        replies = [t.reply(90) for t in trackers]
    assert [str(r.content).split(" (from ")[0] for r in replies] == [
        str(i) for i in range(MESSAGES)]
    assert {str(r.content).split(" (from ")[1].rstrip(")")
            for r in replies} <= {str(p.pid) for p in pool}
    ran = Counter(lines(runs))
    assert len(ran) == MESSAGES and set(ran.values()) == {1}, ran.most_common(3)


def test_a_pool_member_killed_with_the_broker_delays_only_what_it_may_have_had(
        endpoint: str, start_broker, processes, tmp_path: Path) -> None:
    options = ("--hold", "60", "--max-inflight", "1000")
    broker = start_broker(endpoint, *options)
    pool = [processes.start([sys.executable, "-m", "robotlab.robotd", "--name", "w", "--broker",
                             endpoint, "--handler", "handlers:counted_long"],
                            env={"RUNS": str(tmp_path / "runs")}, name=f"w-{n}") for n in (1, 2)]
    wait_until(lambda: len(live(endpoint, "w")) == 2, timeout=15, message="two instances of w")
    with bus.connect(endpoint, name="alice") as alice:
        # Given both instances handed `any` work, so the journal holds both as members
        trackers = [alice.send_request("w", i, any=True) for i in range(40)]
        answered_by = {str(t.reply(30).content).split(" (from ")[1] for t in trackers}
        assert answered_by == {f"{p.pid})" for p in pool}
    # When the broker and w-1 are killed with -9 (their host's crash), and the broker restarts
    os.kill(pool[0].pid, signal.SIGKILL)
    os.kill(broker.pid, signal.SIGKILL)
    broker.popen.wait(5)
    start_broker(endpoint, *options)
    wait_until(lambda: len(live(endpoint, "w")) == 1, timeout=30, message="w-2 back")
    # Then a request sent for the first time goes to w-2 at once: only a resend, which w-1 may
    # have had, would wait for w-1 (up to the hold, 60 s)
    with bus.connect(endpoint, name="carol") as carol:
        reply = carol.request("w", "new", any=True, timeout=20)
    assert reply.content == f"new (from {pool[1].pid})"


def test_work_held_through_a_cut_is_shared_by_the_workers_as_they_come_back(
        endpoint: str, start_broker, processes, tmp_path: Path) -> None:
    start_broker(endpoint, "--hold", "60", "--ack-timeout", "60")
    runs = tmp_path / "runs"
    workers = [processes.start([sys.executable, "-m", "robotlab.robotd", "--name", "w", "--broker",
                                endpoint, "--handler",
                                "handlers:counted_slow"], env={"RUNS": str(runs)}, name=f"w-{n}")
               for n in range(4)]
    wait_until(lambda: len(live(endpoint, "w")) == 4, timeout=30, message="four workers live")
    with bus.connect(endpoint, name="alice") as alice:
        # Given four workers, each busy with a task, cut off (SIGSTOP: silent, their work kept for
        # them)
        busy = [alice.send_request("w", f"5:busy-{n}", any=True) for n in range(4)]
        wait_until(lambda: len(lines(runs)) == 4, timeout=30, message="each worker busy")
        for worker in workers:
            os.kill(worker.pid, signal.SIGSTOP)
        wait_until(lambda: not live(endpoint, "w"), timeout=30, message="the workers gone silent")
        # When 20 tasks come in during the cut, and the cut heals (the workers come back in
        # whatever order their reconnects take). Each task takes 3 s, longer than the others'
        # return, so a worker back first does not finish its share and take more before they
        # are back (an idle worker does take held work: nothing waits for a worker that is slow).
        tasks = [alice.send_request("w", f"3:task-{n}", any=True) for n in range(20)]
        wait_until(lambda: alice.admin("stats")["held"] >= 20, timeout=30, message="the tasks held")
        for worker in workers:
            os.kill(worker.pid, signal.SIGCONT)
        wait_until(lambda: len(live(endpoint, "w")) == 4, timeout=30, message="the workers back")
        replies = [t.reply(120) for t in tasks + busy]
    # Then every task ran once, and the held tasks were shared, not all taken by the first one back
    ran = Counter(lines(runs))
    assert len(ran) == 24 and set(ran.values()) == {1}, ran.most_common(3)
    by_worker = Counter(str(r.content).split(" (from ")[1] for r in replies[:20])
    assert max(by_worker.values()) <= 1.5 * 20 / 4, by_worker


def test_a_requester_back_after_its_answerer_gets_the_reply_finished_while_the_broker_was_down(
        endpoint: str, start_broker, processes) -> None:
    broker = start_broker(endpoint, "--hold", "60")
    taken: list = []
    bob = bus.BusClient(endpoint, name="bob", role="robot")
    bob.on_message(lambda delivery, message: (delivery.ack(), taken.append(message)),
                   manual=True).start()
    try:
        # Given alice (`robotlab send --wait`) waiting on a request bob acked at once
        alice = processes.start([sys.executable, "-m", "robotlab.cli", "send", "--to", "bob",
                                 "--wait", "--timeout", "120", "--broker", endpoint, "later"],
                                name="alice")
        wait_until(lambda: taken and bob.admin("stats")["delivered"] >= 1, timeout=30,
                   message="bob acked it")
        # When the broker restarts while alice is stopped (a restarted broker knows no client by
        # name), bob answers meanwhile, and is back first with his answer
        os.kill(alice.pid, signal.SIGSTOP)
        stop(broker)
        wait_until(lambda: not bob.connected, message="bob notices the broker is gone")
        bob.reply(taken[0], "done while you were away")
        start_broker(endpoint, "--hold", "60")
        wait_until(lambda: bob.connected and not bob._link.kept, timeout=30,
                   message="the broker took bob's answer")
        # Then it is held for her, not dead-lettered, and she gets it when she is back
        assert bob.admin("stats")["dlq_size"] == 0
        os.kill(alice.pid, signal.SIGCONT)
        assert alice.popen.wait(60) == 0, alice.output()
        assert "done while you were away" in alice.output()
    finally:
        bob.close()
