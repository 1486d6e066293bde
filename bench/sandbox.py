"""What confining a skill script costs: one ``ScriptTool`` call per strategy, same script.

Runs ``echo ok`` as a skill script unconfined (sandbox disabled), under bubblewrap and under
Landlock, each with the network off (the seccomp socket filter applied) and on (no filter),
interleaved, and prints the p50 and p90 of each; strategies that cannot run here are skipped
with the reason.

    .venv/bin/python bench/sandbox.py [--calls 100]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from robotlab.config.settings import SandboxSettings
from robotlab.errors import SandboxUnavailable
from robotlab.skills import AgentSkill

STRATEGIES = {"unconfined": {"enabled": False},
              "bubblewrap, network off": {"enabled": True, "strategy": "bubblewrap"},
              "bubblewrap, network on": {"enabled": True, "strategy": "bubblewrap",
                                         "network": True},
              "landlock, network off": {"enabled": True, "strategy": "landlock"},
              "landlock, network on": {"enabled": True, "strategy": "landlock", "network": True}}
"""The skill declares the network; the ceiling decides, so "off" runs under the socket filter."""


def bundle(folder: Path) -> Path:
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: bench\ndescription: say ok\nnetwork: true\n---\nSay ok.\n")
    script = folder / "scripts" / "ok.sh"
    script.write_text("#!/bin/bash\necho ok\n")
    script.chmod(0o755)
    return folder / "SKILL.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    calls = parser.parse_args().calls
    skill_md = bundle(Path(tempfile.mkdtemp()) / "bench")
    tools = {name: AgentSkill(skill_md, SandboxSettings(**settings)).script_tools[0]
             for name, settings in STRATEGIES.items()}
    times: dict[str, list[float]] = {}
    for name, tool in list(tools.items()):
        try:
            tool.grant()
        except SandboxUnavailable as exc:
            print(f"{name}: skipped ({exc})")
            del tools[name]
    for _ in range(calls):
        for name, tool in tools.items():
            started = time.perf_counter()
            assert tool.execute() == "ok\n"
            times.setdefault(name, []).append(time.perf_counter() - started)
    print("| strategy | p50 | p90 |\n| --- | --- | --- |")
    for name, samples in times.items():
        deciles = statistics.quantiles(samples, n=10)
        print(f"| {name} | {statistics.median(samples) * 1000:.1f} ms | {deciles[8] * 1000:.1f} ms "
              "|")


if __name__ == "__main__":
    main()
