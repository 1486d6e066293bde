"""The ``bash`` tool: a shell command in the repository, in its own process group.

On timeout the whole group (and descendants' groups) is killed and the partial output is
kept. Output beyond 30,000 characters is cut.
"""

from __future__ import annotations

import subprocess
from typing import Any

from robotlab.process_groups import Supervisor, kill_tree

DEFAULT_TIMEOUT = 120.0
OUTPUT_LIMIT = 30_000

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "shell command, run in the repository root"},
        "timeout": {"type": "number",
                    "description": "seconds before the command is killed (default 120)"},
    },
    "required": ["command"],
}
DESCRIPTION = ("Run a shell command in the repository root. "
               "Returns '[exit <status>]' and the output.")


def run_bash(root: str, args: dict[str, Any], supervisor: Supervisor | None = None) -> str:
    """Run ``args["command"]``; returns ``[exit <status>]\\n<output>`` (status ``timeout`` on
    timeout)."""
    timeout = float(args.get("timeout") or DEFAULT_TIMEOUT)
    try:
        proc = subprocess.Popen(
            ["/bin/bash", "-c", str(args.get("command", ""))],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
            errors="replace",
        )
    except OSError as exc:
        return f"[exit error: {exc}]"
    if supervisor is not None:
        supervisor.add(proc.pid)
    try:
        output, status = _wait(proc, timeout)
    finally:
        if supervisor is not None:
            supervisor.discard(proc.pid)
    if len(output) > OUTPUT_LIMIT:
        output = output[:OUTPUT_LIMIT] + "\n[output truncated]"
    return f"[exit {status}]\n{output}"


def _wait(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid, grace=1.0)
        output, _ = proc.communicate()
        return output or "", "timeout"
    status = "" if proc.returncode is not None and proc.returncode < 0 else str(proc.returncode)
    return output or "", status
