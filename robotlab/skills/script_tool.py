"""``ScriptTool``: an executable script of a skill bundle, offered to the model as a tool.

The tool takes one optional string ``args`` (split shell-style) and runs
``bash <script> [args...]`` under the sandbox (``robotlab.skills.sandbox``) with the skill's
declared capabilities intersected with the global ``sandbox:`` ceiling. The model reads the
combined stdout and stderr: verbatim on success, ``Error (exit N):\\n<output>`` on a non-zero
exit, ``Error (timed out):\\n<output>\\n[killed: exceeded Ns]`` on time-out.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from robotlab.skills.capabilities import Capabilities
from robotlab.tools.tool import Tool

__all__ = ["ScriptTool", "script_tool_name"]


def script_tool_name(path: Path) -> str:
    """``check-deploy.sh`` gives ``check_deploy``: the stem, non-alphanumeric runs as ``_``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", path.stem).strip("_")


def _description(path: Path, fallback: str) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return fallback
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#!"):
            continue
        if stripped.startswith("#") and stripped.lstrip("#").strip():
            return stripped.lstrip("#").strip()
    return fallback


class ScriptTool(Tool):
    """A skill script as a tool. Build one with ``ScriptTool.from_path``.

    Attributes:
        path: the script.
        capabilities: what the skill declares it needs (narrowed by the ceiling at run time).
        skill_dir: the bundle's directory, always readable by the script.
        sandbox: the ``SandboxSettings`` ceiling; None reads the global ``sandbox:`` section at
            each call.
    """

    parameters = {
        "type": "object",
        "properties": {"args": {"type": "string", "description": "arguments, split shell-style"}},
    }

    def __init__(self, path: Path, capabilities: Capabilities, skill_dir: Path,
                 sandbox: Any = None) -> None:
        self.name = script_tool_name(path)
        super().__init__()
        self.path = path
        self.description = _description(path, self.name)
        self.capabilities = capabilities
        self.skill_dir = skill_dir
        self.sandbox = sandbox

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], capabilities: Capabilities | None = None,
                  skill_dir: str | os.PathLike[str] | None = None,
                  sandbox: Any = None) -> ScriptTool | None:
        """The tool for an executable script, or None when the file is not executable."""
        script = Path(path).resolve()
        if not script.is_file() or not os.access(script, os.X_OK):
            return None
        directory = Path(skill_dir).resolve() if skill_dir else script.parent
        return cls(script, capabilities or Capabilities(), directory, sandbox)

    def _settings(self) -> Any:
        if self.sandbox is not None:
            return self.sandbox
        from robotlab.config.cascade import config

        return config().sandbox

    def grant(self) -> tuple[Capabilities, str]:
        """The effective grant and the strategy that will enforce it.

        Raises:
            SandboxUnavailable: the sandbox is enabled and nothing here can enforce it.
        """
        from robotlab.skills.sandbox import (
            choose_strategy,  # only when a script runs: it imports more
        )

        settings = self._settings()
        ceiling = Capabilities.from_mapping(settings.model_dump())
        granted = self.capabilities.within(ceiling) if settings.enabled else Capabilities(
            timeout=min(self.capabilities.timeout, ceiling.timeout), trust=self.capabilities.trust)
        return granted, choose_strategy(settings.enabled, settings.strategy, granted)

    def execute(self, args: str = "", **_: Any) -> str:
        """Run the script with ``args``; the output (or the error text) goes to the model."""
        from robotlab.skills.sandbox import run_script

        granted, strategy = self.grant()
        run = run_script(["bash", str(self.path), *shlex.split(args or "")], granted, strategy,
                         self.skill_dir)
        if run.timed_out:
            return f"Error (timed out):\n{run.output}\n[killed: exceeded {granted.timeout:g}s]"
        if run.status != 0:
            return f"Error (exit {run.status}):\n{run.output}"
        return run.output
