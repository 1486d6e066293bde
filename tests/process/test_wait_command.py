"""``robotlab wait NAME...`` against a real broker and robotds, run as a user runs it."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from robotlab import bus
from tests.process.conftest import Proc, Processes
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def wait_argv(broker: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "robotlab.cli", "wait", "--broker", broker, *args]


def waiting_on_the_bus(broker: str) -> bool:
    """True once a ``robotlab wait`` has joined the broker (and so is looking at who is there)."""
    with bus.connect(broker, name="test-ps", timeout=2) as client:
        return any(row["name"] == "robotlab-wait" for row in client.admin("ps", all=True))


def exit_code(proc: Proc) -> int:
    """Wait for ``proc`` to exit by itself; its exit code."""
    wait_until(lambda: proc.popen.poll() is not None, timeout=30, message="robotlab wait exited")
    return proc.popen.wait()


def test_wait_returns_as_soon_as_a_robotd_started_after_it_is_on_the_bus(processes: Processes,
                                                                         broker: str,
                                                                         start_robotd) -> None:
    # Given a wait for alice, already looking at the bus, and no alice yet
    waiting = processes.start(wait_argv(broker, "alice", "--timeout", "120"), name="wait")
    wait_until(lambda: waiting_on_the_bus(broker), timeout=30,
               message="robotlab wait joined the broker")
    assert waiting.popen.poll() is None
    # When alice's robotd starts
    alice = start_robotd("alice")
    # Then the wait ends with 0 and one line naming her
    assert exit_code(waiting) == 0, waiting.output()
    assert f"alice is on the bus (pid {alice.pid})" in waiting.output().splitlines()


def test_a_time_out_names_the_robots_still_missing_and_exits_75(broker: str, start_robotd) -> None:
    # Given alice on the bus and no bob
    start_robotd("alice")
    # When a wait for both runs out of time
    done = subprocess.run(wait_argv(broker, "alice", "bob", "--timeout", "1"), capture_output=True,
                          text=True, timeout=60)
    # Then alice's arrival is printed, and one line names bob alone, with the "try again" code
    assert done.returncode == 75, done.stderr
    assert done.stdout.startswith("alice is on the bus")
    assert done.stderr.strip().splitlines() == ["robotlab: timed out after 1s; not on the bus: bob"]


@pytest.mark.parametrize("name", ["", "a b", "a,b"])
def test_a_name_no_robot_can_have_is_a_usage_error(broker: str, name: str) -> None:
    done = subprocess.run(wait_argv(broker, "alice", name), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 64, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert "robot name" in line, line


def test_ctrl_c_exits_130_naming_the_robots_not_there(processes: Processes, broker: str) -> None:
    # Given a wait for a robot that never comes, looking at the bus
    waiting = processes.start(wait_argv(broker, "nobody", "--timeout", "120"), name="wait")
    wait_until(lambda: waiting_on_the_bus(broker), timeout=30,
               message="robotlab wait joined the broker")
    # When it gets Ctrl-C
    waiting.popen.send_signal(signal.SIGINT)
    # Then it exits 130 with one line saying who was missing
    assert exit_code(waiting) == 130, waiting.output()
    assert "robotlab: interrupted; not on the bus: nobody" in waiting.output().splitlines()
