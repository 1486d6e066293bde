"""``python -m robotlab.demo`` (what ``make demo`` runs), as a user would run it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.process.conftest import free_tcp_url
from tests.waiting import wait_until

pytestmark = pytest.mark.process

SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def files_beside_sqlites_own(folder: Path) -> list[str]:
    """The folder's files, leaving out the side files SQLite makes and removes beside a journal as
    it is written."""
    names = {path.name for path in folder.iterdir()}
    side_files = {name for name in names for suffix in SQLITE_SIDE_FILES
                  if name.endswith(suffix) and name.removesuffix(suffix) in names}
    return sorted(names - side_files)


def test_the_demo_runs_beside_a_users_broker_and_leaves_nothing_behind(tmp_path: Path) -> None:
    # Given a user's own broker, started the README's way (no --journal), already running
    state = tmp_path / "xdg-state"
    env = {key: value for key, value in os.environ.items() if key != "STATE_DIRECTORY"}
    env["XDG_STATE_HOME"] = str(state)
    users = subprocess.Popen([sys.executable, "-m", "robotlab.cli", "broker", "--bind",
                              free_tcp_url()], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: users.poll() is not None
                   or list((state / "robotlab").glob("broker-tcp-*.db")), timeout=60,
                   message="the user's broker opening its journal")
        assert users.poll() is None, users.communicate()[1]
        journals_before = files_beside_sqlites_own(state / "robotlab")
        # When the demo runs beside it, with the same state folder
        done = subprocess.run([sys.executable, "-m", "robotlab.demo"], capture_output=True,
                              text=True, env=env,
                              timeout=180)  # about 80 s on a loaded 2-core machine
        # Then the demo used a journal of its own, and left nothing in the user's state folder
        assert files_beside_sqlites_own(state / "robotlab") == journals_before
        assert users.poll() is None
    finally:
        users.terminate()
        users.wait(10)

    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert re.search(r"robotlab broker pid \d+ listening on ipc://", out)
    assert out.count("--handler robotlab.demo.handlers:clerk: pid") == 2
    assert "delivered and acked by 2 instances (fan-out)" in out
    assert len(set(re.findall(r"clerk pid (\d+) filed 'roll call'", out))) == 2, out
    assert "send     demo -> nobody: undeliverable" in out
    assert re.search(r"dlq list: dl-\d+  undeliverable  to nobody  from demo  'a lost letter'", out)
    assert "final reply: Summary: offer yearly billing up front." in out
    assert "robot-to complete" in out
    assert "demo finished in" in out and "failed:" not in out
    # It ends with how to run the same crew for real, pointing at nothing it deleted.
    next_steps = out[out.index("Next: the same crew with a real model"):]
    assert "robotd --name bob" in next_steps and "--serve" in next_steps
    assert "rl-demo-" not in next_steps
    pids = {int(pid) for pid in re.findall(r"\bpid (\d+)", out)}
    alive = [pid for pid in pids if psutil.pid_exists(pid)
             and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"the demo left processes running: {alive}"
