"""Decision files: questions the robot raises for a human, answered by editing the file.

A file is YAML front matter (id, status, blocking, created_at, created_iteration,
resolved_at, resolution, question, recommendation) and a Markdown body. Statuses:
``pending`` (the human edits it to) ``resolved`` (the orchestrator, after a committing
iteration that saw the answer, sets) ``closed``; a human may also set ``dismissed``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import secrets
from pathlib import Path
from typing import Any

import yaml

from robotlab.to.record import atomic_file

_TRUE = {"true", "yes", "1"}
_DECISION_HEADING = re.compile(r"^## Your Decision\s*$", re.MULTILINE)


@dataclasses.dataclass
class Decision:
    """One decision file, parsed."""

    path: Path
    id: str
    status: str
    blocking: bool
    question: str
    recommendation: str = ""
    resolution: str = ""


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---", 4)
    if end < 0:
        return {}, text
    raw, body = text[4:end], text[end + 4:]
    try:
        data = yaml.safe_load(raw)
        if isinstance(data, dict):
            return data, body
    except yaml.YAMLError:
        pass
    return _lenient(raw), body


def _lenient(raw: str) -> dict[str, Any]:
    """``key: value`` lines, for front matter a human broke (e.g. ``resolution: a: b``)."""
    data: dict[str, Any] = {}
    for line in raw.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith(" "):
            data[key.strip()] = value.strip().strip("'\"")
    return data


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _read(path: Path) -> str:
    """A decision file's text. A person may save it from an editor set to another encoding: what
    is not UTF-8 reads as U+FFFD, so their answer still counts rather than stopping the run."""
    return path.read_text(encoding="utf-8", errors="replace")


def parse(path: Path) -> Decision | None:
    """Parse one decision file; None when it cannot be read."""
    try:
        text = _read(path)
    except OSError:
        return None
    meta, body = _front_matter(text)
    resolution = _text(meta.get("resolution"))
    if not resolution:
        parts = _DECISION_HEADING.split(body, maxsplit=1)
        resolution = (re.sub(r"<!--.*?-->", "", parts[1], flags=re.DOTALL).strip()
                      if len(parts) > 1 else "")
    return Decision(
        path=path,
        id=_text(meta.get("id")) or path.stem,
        status=_text(meta.get("status")).lower() or "pending",
        blocking=_text(meta.get("blocking")).lower() in _TRUE,
        question=_text(meta.get("question")),
        recommendation=_text(meta.get("recommendation")),
        resolution=resolution,
    )


def _numbered(options: list[str]) -> str:
    return "\n".join(f"{i}. {option}" for i, option in enumerate(options, 1)) or "(none provided)"


def render(decision_id: str, request: dict[str, Any], iteration: int) -> str:
    """The text of a new decision file."""
    meta = {
        "id": decision_id,
        "status": "pending",
        "blocking": bool(request.get("blocking")),
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "created_iteration": iteration,
        "resolved_at": None,
        "resolution": None,
        "question": _text(request.get("question")),
        "recommendation": _text(request.get("recommendation")),
    }
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    options = [str(option) for option in request.get("options") or []]
    return (
        f"---\n{front}---\n\n# Decision: {meta['question']}\n\n"
        f"## Situation\n\n{_text(request.get('situation')) or '(none provided)'}\n\n"
        f"## Options\n\n{_numbered(options)}\n\n"
        f"## Recommendation (robot's lean)\n\n{meta['recommendation'] or '(none provided)'}\n\n"
        "## Your Decision\n\n<!-- Set `status: resolved` above and fill `resolution:` "
        "(or write your answer below this comment), then re-run or "
        "`robot-to --resume <run id>`. -->\n"
    )


class DecisionStore:
    """The ``decisions/`` directory of one run."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def write(self, request: dict[str, Any], iteration: int) -> Decision:
        """Record a robot's request as a new pending decision file."""
        self.directory.mkdir(parents=True, exist_ok=True)
        decision_id = f"d-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        path = self.directory / f"{decision_id}.md"
        atomic_file.write(path, render(decision_id, request, iteration))
        parsed = parse(path)
        assert parsed is not None
        return parsed

    def all(self) -> list[Decision]:
        """Every readable decision, oldest first."""
        if not self.directory.is_dir():
            return []
        found = (parse(path) for path in sorted(self.directory.glob("d-*.md")))
        return [decision for decision in found if decision is not None]

    def blocking(self) -> list[Decision]:
        """Pending decisions that stop the loop until answered."""
        return [d for d in self.all() if d.status == "pending" and d.blocking]

    def resolved(self) -> list[Decision]:
        """Answered decisions not yet consumed by a committing iteration."""
        return [d for d in self.all() if d.status == "resolved"]

    def resolve(self, decision_id: str, answer: str) -> Decision | None:
        """Answer a pending decision as a human editing its file would; None if no such pending
        one."""
        decision = next((d for d in self.all() if d.id == decision_id and d.status == "pending"),
                        None)
        if decision is None:
            return None
        # The same reading as parse(), so front matter a person broke is answered, not a crash.
        meta, body = _front_matter(_read(decision.path))
        meta.update(status="resolved", resolution=answer,
                    resolved_at=dt.datetime.now(dt.timezone.utc).isoformat())
        front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
        # The body begins after the closing "---", with its line end unless there was no front
        # matter at all.
        line_end = "" if body.startswith("\n") else "\n"
        atomic_file.write(decision.path, f"---\n{front}---{line_end}{body}")
        return parse(decision.path)

    def close(self, decision: Decision) -> None:
        """Mark ``decision`` closed (only its first ``status:`` line changes)."""
        text = _read(decision.path)
        atomic_file.write(decision.path, re.sub(r"^status:.*$", "status: closed", text, count=1,
                                                flags=re.MULTILINE))


def report(runs_dir: str | Path, run_id: str | None = None) -> tuple[str, int]:
    """The ``robot-to decisions`` listing of one run (default: the newest) and its exit code."""
    runs = Path(runs_dir)
    ids = sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
    if run_id is None and not ids:
        return f"No runs found under {runs}", 1
    if run_id is not None and run_id not in ids:
        known = f"; the newest is {ids[-1]}" if ids else ""
        return (f"No run {run_id} under {runs}{known}. "
                "Run `robot-to decisions` for the newest run."), 1
    run_id = run_id or ids[-1]
    store = DecisionStore(runs / run_id / "decisions")
    pending = [d for d in store.all() if d.status == "pending"]
    resolved = store.resolved()
    lines = [f"Run {run_id}", ""]
    if not pending and not resolved:
        lines.append("No open decisions.")
    for title, group in (("Pending (awaiting your answer):", pending),
                         ("Resolved (not yet consumed):", resolved)):
        if group:
            lines.append(title)
            for d in group:
                lines += [f"  - {d.question}{' [BLOCKING]' if d.blocking else ''}", f"    {d.path}"]
            lines.append("")
    lines += ["", "Answer: set `status: resolved` and fill `resolution:`, "
                  f"then run `robot-to --resume {run_id}`."]
    return "\n".join(lines), 0
