"""The mutable state of one run, its ids and branch name, and ``run.json``.

``run.json`` holds the counters and the run's settings, so ``--resume`` needs no flags.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import secrets
from pathlib import Path
from typing import Any

from robotlab.to.record import atomic_file

SLUG_LIMIT = 40
_COUNTERS = (
    "iteration",
    "consecutive_failures",
    "consecutive_errors",
    "commits",
    "input_tokens",
    "output_tokens",
    "iterations_since_improvement",
    "no_change",
    "rolled_back",
)


def new_run_id(now: dt.datetime | None = None) -> str:
    """``YYYYMMDD-HHMMSS-<6 hex>`` in local time."""
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{secrets.token_hex(3)}"


def slugify(objective: str) -> str:
    """Lowercase, runs of other characters to ``-``, trimmed, cut to 40 at a word boundary, or
    ``takeover``.

    A single word longer than the limit is cut at the limit.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", objective.lower()).strip("-")
    if len(slug) > SLUG_LIMIT:
        cut = slug[: SLUG_LIMIT + 1]
        slug = cut[: cut.rindex("-")] if "-" in cut else slug[:SLUG_LIMIT]
    return slug.rstrip("-") or "takeover"


def branch_name(objective: str, now: dt.datetime | None = None) -> str:
    """``robot-to/<slug>-<YYYYMMDD-HHMMSS>``."""
    return f"robot-to/{slugify(objective)}-{(now or dt.datetime.now()).strftime('%Y%m%d-%H%M%S')}"


@dataclasses.dataclass
class Run:
    """Everything a run knows about itself; counters change as iterations end."""

    run_id: str
    objective: str
    branch: str
    base_commit: str
    run_dir: str
    started_at: str = dataclasses.field(
        default_factory=lambda: dt.datetime.now().astimezone().isoformat())
    iteration: int = 0
    consecutive_failures: int = 0
    consecutive_errors: int = 0
    commits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    last_score_value: float | None = None
    best_score_value: float | None = None
    iterations_since_improvement: int = 0
    no_change: int = 0
    rolled_back: int = 0
    start_branch: str | None = None
    truncated: dict[str, int] = dataclasses.field(default_factory=dict)
    """Replies the output-token limit cut, per iteration (``{"3": 2}``: two in iteration 3)."""
    cut_at: int | None = None
    """The ``max_tokens`` of the last cut reply (None: the provider's own limit cut it)."""
    tokens_estimated: bool = False
    """True once a call's tokens were not the provider's count (it reported no usage)."""
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def notes_path(self) -> str:
        """``<run_dir>/notes.md``."""
        return str(Path(self.run_dir) / "notes.md")

    @property
    def log_path(self) -> str:
        """``<run_dir>/run.log``."""
        return str(Path(self.run_dir) / "run.log")

    @property
    def decisions_path(self) -> str:
        """``<run_dir>/decisions``."""
        return str(Path(self.run_dir) / "decisions")

    @property
    def state_path(self) -> str:
        """``<run_dir>/run.json``."""
        return str(Path(self.run_dir) / "run.json")

    @property
    def truncated_replies(self) -> int:
        """Replies the output-token limit cut, in every iteration so far."""
        return sum(self.truncated.values())

    def count_truncated(self, limit: int | None) -> None:
        """One more reply of the current iteration was cut, at ``limit`` output tokens."""
        key = str(self.iteration)
        self.truncated[key] = self.truncated.get(key, 0) + 1
        self.cut_at = limit

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens so far."""
        return self.input_tokens + self.output_tokens

    def record_score(self, value: float) -> None:
        """A committed (or the base commit's) score: the newest, and the best so far."""
        self.last_score_value = value
        best = self.best_score_value
        self.best_score_value = value if best is None else max(best, value)

    def started(self) -> dt.datetime:
        """``started_at`` parsed (elapsed time includes paused time across resumes)."""
        return dt.datetime.fromisoformat(self.started_at)

    def to_json(self) -> dict[str, Any]:
        """The ``run.json`` document."""
        data = dataclasses.asdict(self)
        data.update(notes_path=self.notes_path, log_path=self.log_path,
                    decisions_path=self.decisions_path)
        return data

    def save(self, root: str | Path = ".") -> None:
        """Write ``run.json`` atomically (``run_dir`` is relative to the repository ``root``)."""
        data = json.dumps(self.to_json(), indent=2, default=str) + "\n"
        atomic_file.write(Path(root) / self.state_path, data)

    @classmethod
    def load(cls, path: str | Path) -> Run:
        """Read ``run.json``; missing counters are 0 and a missing score is None."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        run = cls(
            run_id=data["run_id"],
            objective=data["objective"],
            branch=data["branch"],
            base_commit=data["base_commit"],
            run_dir=data.get("run_dir") or str(Path(path).parent),
            started_at=data.get("started_at") or dt.datetime.now().astimezone().isoformat(),
            last_score_value=data.get("last_score_value"),
            best_score_value=data.get("best_score_value", data.get("last_score_value")),
            start_branch=data.get("start_branch"),
            cost_usd=data["cost_usd"] if "cost_usd" in data else 0.0,
            settings=data.get("settings") or {},
            truncated={str(key): int(value)
                       for key, value in (data.get("truncated") or {}).items()},
            cut_at=data.get("cut_at"),
            tokens_estimated=bool(data.get("tokens_estimated")),
        )
        for key in _COUNTERS:
            setattr(run, key, int(data.get(key) or 0))
        return run
