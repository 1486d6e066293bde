"""The exit summary printed to stdout when a run ends.

::

    robot-to stopped — <model> — 4m 12s
    Reason: max iterations reached (8)
    Branch: robot-to/<slug>-<timestamp>

      Iterations:   8   (6 committed, 2 rolled back)
      Changes:      +312 / -47 across 14 files
      Tokens:       1,204,883 in / 38,902 out
      Cost:         $4.12
      Cut:          2 replies were cut at 8,192 tokens: raise --max-output-tokens (0: no cap)

    Run state:  .robot_lab_to/runs/<run id>/
    Log:        .robot_lab_to/runs/<run id>/run.log
    Next steps:
      git log robot-to/<slug>-<timestamp>
      git diff <base>..HEAD
      robot-to --resume <run id>      (to continue)

The header says ``complete`` when the run reached its goal (target met, stop condition
met) and ``stopped`` otherwise; the Branch line is always printed, the Cut line only when the
output-token limit cut a reply; the token counts read ``~1,234`` when the model server reported
no usage for some calls (the counts are then estimates). ``as_json`` is the same
facts as one JSON object (``robot-to --json``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

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
    cost_usd: float | None = 0.0
    truncated_replies: int = 0
    """Replies the output-token limit cut during the run."""
    max_output_tokens: int | None = None
    """The limit that cut them (None: the provider's own)."""
    tokens_estimated: bool = False
    """Some token counts are estimates: the provider reported no usage for some calls."""


def format_elapsed(seconds: float) -> str:
    """``Xh Ym Zs``, ``Ym Zs`` or ``Zs``."""
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def format_cost(cost: float | None) -> str:
    """Dollars (``$0.0123``, ``$4.20``), or ``unknown`` when the model has no price."""
    if cost is None:
        return "unknown"
    return f"${cost:,.2f}" if cost >= 1 else f"${cost:.4f}"


def _iterations_line(f: SummaryFacts) -> str:
    parts = [f"{f.commits} committed", f"{f.rolled_back} rolled back"]
    if f.no_change:
        parts.append(f"{f.no_change} no change")
    return f"  Iterations:   {f.iterations:<3} ({', '.join(parts)})"


def tokens_line(f: SummaryFacts) -> str:
    """``Tokens:`` in and out; ``~`` and a note when some counts are estimates."""
    if not f.tokens_estimated:
        return f"  Tokens:       {f.input_tokens:,} in / {f.output_tokens:,} out"
    return (f"  Tokens:       ~{f.input_tokens:,} in / ~{f.output_tokens:,} out "
            "(estimated: the model server reported no usage for some calls)")


def truncation_line(f: SummaryFacts) -> str | None:
    """Says how many replies the output-token limit cut and how to raise it; None when none was
    cut."""
    count = f.truncated_replies
    if not count:
        return None
    where = (f"at {f.max_output_tokens:,} tokens" if f.max_output_tokens
             else "at the provider's own output limit")
    said = "1 reply was" if count == 1 else f"{count:,} replies were"
    return f"{said} cut {where}: raise --max-output-tokens (0: no cap)"


def is_complete(reason: str | None) -> bool:
    """True when the run reached its goal (or ended without a stop reason)."""
    return reason is None or reason.startswith(COMPLETE_PREFIXES)


def log_path(f: SummaryFacts) -> str:
    """Where the run's ``run.log`` is (relative to the repository)."""
    return f"{f.run_dir.rstrip('/')}/run.log"


def resume_command(f: SummaryFacts) -> str | None:
    """How to continue the run, or None when it cannot be resumed."""
    return f"robot-to --resume {f.run_id}" if f.resumable else None


def as_json(f: SummaryFacts, exit_code: int) -> str:
    """The summary as one JSON object on one line (ends with a newline)."""
    data: dict[str, Any] = dataclasses.asdict(f)
    data.update(status="complete" if is_complete(f.reason) else "stopped", exit_code=int(exit_code),
                elapsed=round(f.elapsed, 1), branch_deleted=f.returned_to is not None,
                log=log_path(f), notes=f"{f.run_dir.rstrip('/')}/notes.md",
                resume=resume_command(f))
    return json.dumps(data, ensure_ascii=False) + "\n"


def render(f: SummaryFacts) -> str:
    """The summary text (ends with a newline)."""
    complete = is_complete(f.reason)
    lines = ["", f"robot-to {'complete' if complete else 'stopped'} — {f.model} — "
                 f"{format_elapsed(f.elapsed)}"]
    if f.reason:
        lines.append(f"Reason: {f.reason}")
    lines += [
        f"Branch: {f.branch}" + (f" (deleted: nothing was committed; back on {f.returned_to})"
                                 if f.returned_to else ""),
        "",
        _iterations_line(f),
        f"  Changes:      +{f.insertions:,} / -{f.deletions:,} across {f.files:,} files",
        tokens_line(f),
        f"  Cost:         {format_cost(f.cost_usd)}"
        + ("" if f.cost_usd is not None else " (the model is not in litellm's price table)"),
        *([f"  Cut:          {cut}"] if (cut := truncation_line(f)) else []),
        "",
        f"Run state:  {f.run_dir.rstrip('/')}/",
        f"Log:        {log_path(f)}",
        "Next steps:",
    ]
    if f.commits:
        lines += [f"  git log {f.branch}", f"  git diff {f.base_commit[:7]}..HEAD"]
    else:
        lines.append(f"  nothing was committed; read {f.run_dir.rstrip('/')}/notes.md")
    if f.resumable:
        lines.append(f"  robot-to --resume {f.run_id}      (to continue)")
    return "\n".join(lines) + "\n\n"
