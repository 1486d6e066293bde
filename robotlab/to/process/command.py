"""Run a gate command (verify, measure, floor) in its own process group, under a timeout.

On timeout the whole group (and any descendant's group) is killed, the output read so far
is kept, and the result is a failure. The output handed to notes and repair prompts is
clamped: its head and, because test runners print their summary last, its tail.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess

from robotlab.process_groups import Supervisor, kill_tree

OUTPUT_LIMIT = 4000
HEAD_CHARS = 1000
TRUNCATED = "\n[output truncated]\n"
DEFAULT_TIMEOUT = 600.0


@dataclasses.dataclass(frozen=True)
class CommandResult:
    """What a gate command did: ``passed`` means exit status 0 within the timeout."""

    passed: bool
    output: str
    stdout: str
    timed_out: bool = False
    status: int | None = None


def clamp(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """Strip, then keep the first 1000 and last ``limit - 1000`` characters of long text."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:HEAD_CHARS] + TRUNCATED + text[-(limit - HEAD_CHARS):]


def run_command(
    command: str,
    work_dir: str | os.PathLike[str],
    timeout: float = DEFAULT_TIMEOUT,
    supervisor: Supervisor | None = None,
    merge: bool = True,
) -> CommandResult:
    """Run ``command`` through the shell in ``work_dir``; stdin closed, own process group.

    With ``merge`` (verify, floor) stdout and stderr are one stream; without it (measure)
    ``stdout`` holds stdout alone, so a number is read from stdout only.
    """
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=work_dir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge else subprocess.PIPE,
        start_new_session=True,
        text=True,
        errors="replace",
    )
    if supervisor is not None:
        supervisor.add(proc.pid)
    try:
        return _collect(proc, timeout)
    finally:
        if supervisor is not None:
            supervisor.discard(proc.pid)


def _collect(proc: subprocess.Popen[str], timeout: float) -> CommandResult:
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_tree(proc.pid)
        stdout, stderr = proc.communicate()
    stdout, stderr = stdout or "", stderr or ""
    output = stdout + ("\n" + stderr if stdout and stderr else stderr)
    if timed_out:
        output += f"\n[verification timed out after {timeout:g}s]"
    passed = not timed_out and proc.returncode == 0
    return CommandResult(passed, clamp(output), stdout, timed_out, proc.returncode)
