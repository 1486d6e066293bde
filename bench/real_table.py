"""The results of bench/robot_to_real.py: one row per agent run, totals per agent, and the
docs/benchmarks.md section they are appended to (every run is kept, none is picked)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path

SECTION = "## robot-to against mini-swe-agent on a local 0.5B model"
INTRO = """\
Six small repositories (bench/tasks/: an off-by-one, a missing function, a rename across two
files, a wrong doctest, a script's output line, a value in a config file), each with a verify
command that fails before and passes after a reference patch (tests/to/test_bench_tasks.py).
`bench/robot_to_real.py` gives each task to robot-to (the `robot-to` CLI, `--local-guards
--no-stream`, the verify command as its gate, `--measure`/`--target 1` so a run ends at its
first verified commit) and to mini-swe-agent 2.4.6 (its `DefaultAgent`, bash-only text-based
model, step limit, no cost tracking), interleaved task by task, both against the same local
llama.cpp server serving Qwen2.5-Coder 0.5B Instruct Q4_K_M (`tests/model/install_server.sh`;
see docs/robot-to/local-models.md).
Solved: robot-to committed and the verify command passes on the tree it left; mini-swe-agent's
working tree passes the verify command. Tokens are the server's own `usage` summed over every
call an agent made, through a recording proxy. Every run is appended below, good or bad.
"""


@dataclasses.dataclass(frozen=True)
class Result:
    """One agent's run on one task."""

    task: str
    agent: str
    solved: bool
    rounds: int
    """robot-to's iterations, mini-swe-agent's steps."""
    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    ended: str

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def render(results: list[Result], agents: list[str]) -> str:
    """A Markdown table of every run, then one total row per agent."""
    lines = ["| task | agent | solved | iterations / steps | model calls | tokens (in / out) | "
             "wall s | ended |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        lines.append(f"| {r.task} | {r.agent} | {'yes' if r.solved else 'no'} | {r.rounds} | "
                     f"{r.calls} | {r.tokens:,} ({r.prompt_tokens:,} / {r.completion_tokens:,}) | "
                     f"{r.seconds:.0f} | {r.ended.replace('|', '/')[:90]} |")
    for agent in agents:
        mine = [r for r in results if r.agent == agent]
        solved = sum(r.solved for r in mine)
        tokens = sum(r.tokens for r in mine)
        per_solved = f"{tokens // solved:,}" if solved else "-"
        lines.append(f"| **total** | **{agent}** | **{solved}/{len(mine)}** | "
                     f"{sum(r.rounds for r in mine)} | {sum(r.calls for r in mine)} | {tokens:,} "
                     f"({per_solved} per solved task) | {sum(r.seconds for r in mine):.0f} | |")
    return "\n".join(lines)


def commit_of(root: Path) -> str:
    """The checked-out commit, short, marked when tracked files differ from it (take it when the
    run starts: the code measured is the code of that moment)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                          text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           capture_output=True, text=True)
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def append_section(root: Path, command: str, table: str, commit: str, load_before: float,
                   load_after: float) -> None:
    """Append one run (date, commit, load, command, table) to the section, creating it if absent."""
    path = root / "docs" / "benchmarks.md"
    text = path.read_text()
    block = (f"### {time.strftime('%Y-%m-%d %H:%M')}, commit {commit}\n\n"
             f"`.venv/bin/python {command}`; {os.cpu_count()} cores shared with other work, load "
             "average "
             f"{load_before:.1f} at the start and {load_after:.1f} at the end.\n\n{table}\n")
    start = text.find(SECTION + "\n")
    if start == -1:
        path.write_text(text.rstrip() + f"\n\n{SECTION}\n\n{INTRO}\n{block}")
        return
    end = text.find("\n## ", start + len(SECTION))
    end = len(text) if end == -1 else end + 1
    path.write_text(text[:end].rstrip() + f"\n\n{block}\n" + text[end:].lstrip("\n"))
