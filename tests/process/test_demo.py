"""``python -m robotlab.demo`` (what ``make demo`` runs), as a user would run it."""

from __future__ import annotations

import re
import subprocess
import sys

import psutil
import pytest

pytestmark = pytest.mark.process


def test_the_demo_runs_every_part_and_leaves_no_process_behind() -> None:
    done = subprocess.run([sys.executable, "-m", "robotlab.demo"], capture_output=True, text=True,
                          timeout=180)  # about 80 s on a loaded 2-core machine

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
    assert "robotd --name bob" in next_steps and "--serve" in next_steps and "rl-demo-" not in next_steps
    pids = {int(pid) for pid in re.findall(r"\bpid (\d+)", out)}
    alive = [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"the demo left processes running: {alive}"
