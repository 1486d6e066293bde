"""A robotd as PID 1 of its own PID namespace, as in a container: it reaps its handlers' orphans,
passes a stop on to the program once and exits as the program did."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import psutil
import pytest

from robotlab import bus
from tests.process.conftest import Proc, Processes, live
from tests.waiting import wait_until

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a PID namespace needs root and util-linux's unshare")


def robotd_as_pid1(processes: Processes, broker: str, handler: str) -> tuple[Proc, psutil.Process]:
    """``robotd --name boxed`` as PID 1 of a new PID namespace; the unshare process and the
    namespace's PID 1, once the robot is on the broker. (``--kill-child``: the teardown's kill
    of unshare ends the namespace too.)"""
    unshare = processes.start(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc",
                               sys.executable, "-m", "robotlab.robotd", "--name", "boxed",
                               "--broker", broker, "--handler", handler], name="boxed")
    wait_until(lambda: live(broker, "boxed"), timeout=60, message="boxed is on the broker")
    (pid1,) = psutil.Process(unshare.pid).children()
    return unshare, pid1


def zombies(process: psutil.Process) -> list[int]:
    return [child.pid for child in process.children()
            if child.status() == psutil.STATUS_ZOMBIE]


def test_orphans_are_reaped_and_a_stop_ends_it_with_the_programs_code(
        processes: Processes, broker: str) -> None:
    unshare, pid1 = robotd_as_pid1(processes, broker, "handlers:orphan")
    with bus.connect(broker, name="asker") as asker:
        for _ in range(5):
            assert asker.request("boxed", "go", timeout=30).content == "left one"
    # Each sleep, orphaned, became PID 1's child: ended, it is reaped, not left a zombie
    wait_until(lambda: len(pid1.children()) == 1 and not zombies(pid1), timeout=30,
               message="PID 1 has only the program left as its child")
    # docker stop: SIGTERM to PID 1
    pid1.send_signal(signal.SIGTERM)
    assert unshare.popen.wait(30) == 0
    assert "robotd boxed stopped" in unshare.output()


def test_a_terminals_ctrl_c_reaches_the_program_once(processes: Processes, broker: str,
                                                     tmp_path: Path) -> None:
    unshare, pid1 = robotd_as_pid1(processes, broker, "handlers:slow")
    marker = tmp_path / "started"
    with bus.connect(broker, name="asker") as asker:
        tracker = asker.send_request("boxed", f"2:{marker}")
        wait_until(marker.exists, timeout=30, message="the handler started")
        # A terminal's Ctrl-C goes to its foreground process group: unshare's and PID 1's. Had
        # the program been in it too, it would have had the signal twice: "Ctrl-C again" exits
        # at once, without the delivery in hand.
        os.killpg(unshare.pid, signal.SIGINT)
        assert tracker.reply(30).content == "slept 2"
    assert unshare.popen.wait(30) == 0
    assert "robotd boxed stopped" in unshare.output()
