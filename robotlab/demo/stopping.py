"""Stopping the demo's processes: SIGTERM, a grace period, then SIGKILL."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable

STOP_GRACE = 30.0
"""Seconds a process has to exit after SIGTERM. A robotd that has loaded litellm takes one or two
seconds of CPU to exit; on a loaded two-core machine that was over 10 s of wall time."""


def stop(procs: Iterable[subprocess.Popen[bytes]], grace: float = STOP_GRACE) -> None:
    """SIGTERM every process in ``procs``, wait up to ``grace`` seconds for each, then SIGKILL
    what is left: a slow exit never fails the demo, and nothing is left running."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
