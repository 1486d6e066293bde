"""The exit summary printed to stdout when a run ends.

::

    robot-to stopped — <model> — 4m 12s
    Reason: max iterations reached (8)
    Branch: robot-to/<slug>-<timestamp>

      Iterations:   8   (6 committed, 2 rolled back)
      Changes:      +312 / -47 across 14 files
      Tokens:       1,204,883 in / 38,902 out

    Run state:  .robot_lab_to/runs/<run id>/
    Next steps:
      git log robot-to/<slug>-<timestamp>
      git diff <base>..HEAD

The header says ``complete`` when the run reached its goal (target met, stop condition
met) and ``stopped`` otherwise; the Branch line is always printed.
"""

from __future__ import annotations

import dataclasses

COMPLETE_PREFIXES = ("target met", "stop condition met")


@dataclasses.dataclass(frozen=True)
class SummaryFacts:
    """What the summary reports."""

    model: str
    elapsed: float
    reason: str | None
    branch: str
    run_id: str
    run_dir: str
    base_commit: str
    iterations: int
    commits: int
    rolled_back: int
    no_change: int
    input_tokens: int
    output_tokens: int
    insertions: int = 0
    deletions: int = 0
    files: int = 0
    resumable: bool = False
    returned_to: str | None = None


def format_elapsed(seconds: float) -> str:
    """``Xh Ym Zs``, ``Ym Zs`` or ``Zs``."""
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def _iterations_line(f: SummaryFacts) -> str:
    parts = [f"{f.commits} committed", f"{f.rolled_back} rolled back"]
    if f.no_change:
        parts.append(f"{f.no_change} no change")
    return f"  Iterations:   {f.iterations:<3} ({', '.join(parts)})"


def render(f: SummaryFacts) -> str:
    """The summary text (ends with a newline)."""
    complete = f.reason is None or f.reason.startswith(COMPLETE_PREFIXES)
    lines = ["", f"robot-to {'complete' if complete else 'stopped'} — {f.model} — {format_elapsed(f.elapsed)}"]
    if f.reason:
        lines.append(f"Reason: {f.reason}")
    lines += [
        f"Branch: {f.branch}" + (f" (deleted: nothing was committed; back on {f.returned_to})" if f.returned_to else ""),
        "",
        _iterations_line(f),
        f"  Changes:      +{f.insertions:,} / -{f.deletions:,} across {f.files:,} files",
        f"  Tokens:       {f.input_tokens:,} in / {f.output_tokens:,} out",
        "",
        f"Run state:  {f.run_dir.rstrip('/')}/",
        "Next steps:",
    ]
    if f.commits:
        lines += [f"  git log {f.branch}", f"  git diff {f.base_commit[:7]}..HEAD"]
    else:
        lines.append(f"  nothing was committed; read {f.run_dir.rstrip('/')}/notes.md")
    if f.resumable:
        lines.append(f"  robot-to --resume {f.run_id}")
    return "\n".join(lines) + "\n\n"
