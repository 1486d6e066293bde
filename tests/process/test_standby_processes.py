"""A primary and a backup broker (Binary Star), with real processes: kill -9 the primary and the
crew moves to the backup, and ``robotlab send --wait`` works again within a few heartbeats."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from robotlab import bus
from tests.process.conftest import broker_argv
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def robots_at(url: str) -> list[str]:
    """Robot names live at one broker of the pair ([] when it does not serve clients)."""
    try:
        with bus.connect(url, name="standby-probe", timeout=0.5) as probe:
            return [row["name"] for row in probe.admin("ps", timeout=1)]
    except Exception:
        return []


def send_wait(urls: str, text: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robotlab.cli", "send", "--to", "bob", "--broker",
                           urls, "--wait", "--timeout", "10", text], capture_output=True, text=True,
                          timeout=60)


def test_kill_9_of_the_primary_moves_the_crew_to_the_backup(processes) -> None:
    folder = Path(tempfile.mkdtemp(prefix="rl-"))
    a, b = f"ipc://{folder}/a.sock", f"ipc://{folder}/b.sock"
    state_a, state_b = f"ipc://{folder}/a.state", f"ipc://{folder}/b.state"
    primary = processes.start(broker_argv(a, "--standby", "primary", "--state-bind", state_a,
                                          "--peer", state_b, "--journal", str(folder / "a.db")),
                              name="primary")
    backup = processes.start(broker_argv(b, "--standby", "backup", "--state-bind", state_b,
                                         "--peer", state_a, "--journal", str(folder / "b.db")),
                             name="backup")
    wait_until(lambda: "-> passive" in backup.output(), timeout=15,
               message="the backup sees the active primary")
    bob = processes.start([sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker",
                           f"{a},{b}", "--handler", "handlers:echo"], name="bob")
    wait_until(lambda: "bob" in robots_at(a), timeout=15, message="bob joins the primary")
    assert robots_at(b) == []  # the passive backup turns clients away
    before = send_wait(f"{a},{b}", "before")
    assert (before.returncode, before.stdout.strip()) == (0, f"before (from {bob.pid})"), \
        before.stderr

    # When the primary is killed, the backup takes over once clients come to it
    os.kill(primary.pid, signal.SIGKILL)
    wait_until(lambda: "bob" in robots_at(b), timeout=10, message="bob moved to the backup")
    after = send_wait(f"{a},{b}", "after")
    assert (after.returncode, after.stdout.strip()) == (0, f"after (from {bob.pid})"), \
        after.stderr + backup.output()
    assert "taking over as the active broker" in backup.output()


def start_pair(processes, folder: Path, *extra: str) -> tuple[str, str, object, object]:
    """A primary and a backup broker, the backup passive once it has heard the primary."""
    a, b = f"ipc://{folder}/a.sock", f"ipc://{folder}/b.sock"
    state_a, state_b = f"ipc://{folder}/a.state", f"ipc://{folder}/b.state"
    primary = processes.start(broker_argv(a, "--standby", "primary", "--state-bind", state_a,
                                          "--peer", state_b,
                                          "--journal", str(folder / "a.db"), *extra),
                              name="primary")
    backup = processes.start(broker_argv(b, "--standby", "backup", "--state-bind", state_b,
                                         "--peer", state_a,
                                         "--journal", str(folder / "b.db"), *extra), name="backup")
    wait_until(lambda: "-> passive" in backup.output(), timeout=15,
               message="the backup sees the active primary")
    return a, b, primary, backup


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robotlab.cli", *argv], capture_output=True,
                          text=True, timeout=60)


def test_a_passive_standby_says_try_again_and_a_takeover_is_waited_for(processes) -> None:
    # Heartbeats of a second, as in production: the backup takes over 2 s after the primary's last
    # word.
    a, b, primary, backup = start_pair(processes, Path(tempfile.mkdtemp(prefix="rl-")),
                                       "--heartbeat", "1")
    # Only the passive backup's address: not "unavailable" (69) but "try again" (75), saying why
    refused = cli("ps", "--broker", b)
    assert refused.returncode == 75, refused.stderr
    assert "passive" in refused.stderr and "try again if it is taking over" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1
    # The primary killed, a command given both addresses at once keeps trying the pair while the
    # backup takes over, and is served by it
    os.kill(primary.pid, signal.SIGKILL)
    served = cli("ps", "--broker", f"{a},{b}")
    assert served.returncode == 0, served.stderr + backup.output()
    assert "taking over as the active broker" in backup.output()


def test_a_primary_that_served_alone_beside_a_stopped_active_backup_stops_when_it_hears_it(
        processes) -> None:
    # The backup took over and was then stopped (SIGSTOP: its process up, its sockets unanswered)
    # while the primary came back: the primary hears nothing and serves alone. Once the backup
    # runs again, two brokers have served the crew: the primary stops, the backup goes on.
    folder = Path(tempfile.mkdtemp(prefix="rl-"))
    a, b, primary, backup = start_pair(processes, folder)
    bob = processes.start([sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker",
                           f"{a},{b}", "--handler", "handlers:echo"], name="bob")
    wait_until(lambda: "bob" in robots_at(a), timeout=15, message="bob joins the primary")
    os.kill(primary.pid, signal.SIGKILL)
    wait_until(lambda: "bob" in robots_at(b), timeout=15, message="bob moved to the backup")
    os.kill(backup.pid, signal.SIGSTOP)
    try:
        again = processes.start(primary.popen.args, name="primary-again")
        wait_until(lambda: "serving alone" in again.output(), timeout=15,
                   message="the primary serving alone")
    finally:
        os.kill(backup.pid, signal.SIGCONT)
    wait_until(lambda: again.popen.poll() is not None, timeout=15,
               message=f"the primary stopping once it hears the active backup: {again.output()}")
    assert again.popen.returncode == 75, again.output()  # try again: it will join as passive
    assert "served alone, but the peer is active" in again.output()
    wait_until(lambda: "bob" in robots_at(b), timeout=15, message="bob on the backup")
    answered = send_wait(f"{a},{b}", "one broker")
    assert (answered.returncode, answered.stdout.strip()) == (0, f"one broker (from {bob.pid})"), \
        answered.stderr + backup.output()
