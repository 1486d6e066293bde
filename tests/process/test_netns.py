"""A robot across a network boundary: broker and robotd on two test hosts (network namespaces).

The namespaces and the veth pair between them are made by the test itself and removed after;
traffic only flows between them. Needs root and iproute2; skipped where namespaces cannot be
made (an unprivileged container), with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.process.netns_hosts import Hosts, cut, mend
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def test_a_robot_on_another_host_is_reached_through_the_broker(hosts: Hosts, processes) -> None:
    url = f"tcp://{hosts.broker_ip}:5555"
    py = sys.executable
    broker = processes.start(hosts.argv(hosts.broker_ns, py, "-m", "robotlab.cli", "broker",
                                        "--bind", url, "--insecure", "--heartbeat", "0.2",
                                        "--no-journal"), name="broker-netns")
    bob = processes.start(hosts.argv(hosts.robot_ns, py, "-m", "robotlab.robotd", "--name", "bob",
                                     "--broker", url, "--handler",
                                     "handlers:echo"), name="robotd-netns")

    def robots_seen_from_the_broker_host() -> list:
        done = subprocess.run(hosts.argv(hosts.broker_ns, py, "-m", "robotlab.cli", "ps",
                                         "--broker", url, "--json"),
                              capture_output=True, text=True, timeout=30, env=bob.env)
        return json.loads(done.stdout) if done.returncode == 0 else []

    rows = wait_until(robots_seen_from_the_broker_host, timeout=30,
                      message="bob registered across the boundary")
    assert [(r["name"], r["pid"]) for r in rows] == [("bob", bob.pid)], broker.output()
    asked = subprocess.run(hosts.argv(hosts.robot_ns, py, "-m", "robotlab.cli", "send", "--to",
                                      "bob", "--broker", url, "--wait", "--timeout", "10",
                                      "across"),
                           capture_output=True, text=True, timeout=60, env=bob.env)
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.strip() == f"across (from {bob.pid})"


def test_a_robot_cut_off_for_10_s_mid_task_delivers_everything_once_and_its_reply_arrives(
        hosts: Hosts, processes, tmp_path: Path) -> None:
    url = f"tcp://{hosts.broker_ip}:5555"
    py = sys.executable
    runs, go, out = tmp_path / "runs", tmp_path / "go", tmp_path / "replies"
    broker = processes.start(hosts.argv(hosts.broker_ns, py, "-m", "robotlab.cli", "broker",
                                        "--bind", url, "--insecure", "--heartbeat", "0.2",
                                        "--hold", "40", "--journal", str(tmp_path / "broker.db")),
                             name="broker-netns")
    bob = processes.start(hosts.argv(hosts.robot_ns, py, "-m", "robotlab.robotd", "--name", "bob",
                                     "--broker", url, "--handler",
                                     "handlers:counted_slow"), env={"RUNS": str(runs)},
                          name="robotd-netns")
    wait_until(lambda: "ready" in bob.output(), timeout=30, message="bob welcomed by the broker")
    alice = processes.start(hosts.argv(hosts.broker_ns, py, "-c",
                                       "import sys, handlers; "
                                       "handlers.partition_client(*sys.argv[1:])",
                                       url, str(go), str(out)), name="alice-netns")

    # Given bob working on a 4 s task, when his host's link goes down for 10 s
    wait_until(lambda: runs.exists() and "slow" in runs.read_text(), timeout=30,
               message="bob started the slow task")
    cut(hosts)
    cut_at = time.monotonic()
    wait_until(lambda: "went silent" in broker.output(), timeout=10,
               message="the broker misses bob")
    go.touch()  # alice sends five more while bob is away: the broker holds them for him
    wait_until(lambda: time.monotonic() - cut_at >= 10, timeout=15,
               message="ten seconds of partition")
    mend(hosts)

    # Then every request is answered, the slow one included, and each ran exactly once
    assert alice.popen.wait(120) == 0, alice.output()
    replies = [json.loads(line) for line in out.read_text().splitlines()]
    labels = ["slow"] + [f"quick-{i}" for i in range(5)]
    assert replies == [{"reply": f"{label} (from {bob.pid})"} for label in labels], alice.output()
    assert Counter(runs.read_text().split()) == Counter(labels)
