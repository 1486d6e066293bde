"""``notes.md``: the cross-iteration memory, written only by the orchestrator.

Entries are appended atomically and never rolled back. The prompt gets a bounded view
(``bounded``): the newest entries in full plus one digest line per older entry, so the
prompt does not grow with the run while the whole file stays on disk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from robotlab.to.record import atomic_file

RECENT_ENTRIES = 8
PROMPT_CHAR_LIMIT = 12_000
DIGEST_LINES = 40
_ENTRY_SPLIT = re.compile(r"\n(?=### Iteration )")
_FENCE = "```"


def _bullets(items: Iterable[str]) -> str:
    lines = [f"- {item}" for item in items]
    return "\n".join(lines) if lines else "- (none)"


def _fenced(text: str) -> str:
    return f"{_FENCE}\n{text.replace(_FENCE, '` ` `')}\n{_FENCE}"


class Notes:
    """The notes file of one run."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._retries: list[str] = []

    def retry(self, error_class: str, message: str) -> None:
        """An error the iteration is retried after: it goes into the iteration's one entry."""
        self._retries.append(f"{error_class}: {message}")

    def write_header(self, run_id: str, objective: str) -> None:
        """Start the file: run id, objective and the log heading."""
        atomic_file.write(self.path, f"# robot-to run: {run_id}\n\nObjective: {objective}\n\n"
                                     "## Iteration Log\n")

    def read(self) -> str:
        """The whole file, or "" when it does not exist."""
        return self.path.read_text(encoding="utf-8") if self.path.exists() else ""

    def _entry(self, iteration: int, marker: str, body: list[str],
               ends_iteration: bool = True) -> None:
        if self._retries and ends_iteration:
            body = [*body, "", f"**Retried after {len(self._retries)} error(s):**",
                    _bullets(self._retries)]
            self._retries = []
        heading = f"### Iteration {iteration}" + (f" {marker}" if marker else "")
        atomic_file.append(self.path, "\n" + heading + "\n\n" + "\n".join(body) + "\n")

    def success(self, iteration: int, summary: str, changes: list[str], learnings: list[str],
                files: list[str] | None = None) -> None:
        """A committing iteration (written before the commit is attempted); ``files`` as git
        staged them."""
        body = [f"**Summary:** {summary}", "", "**Changes:**", _bullets(changes)]
        if files is not None:
            body += ["", "**Files changed (git):**", _bullets(files)]
        body += ["", "**Learnings:**", _bullets(learnings)]
        self._entry(iteration, "", body)

    def failure(self, iteration: int, summary: str, learnings: list[str]) -> None:
        """The robot reported failure or submitted nothing."""
        self._entry(iteration, "[FAIL]",
                    [f"**Summary:** {summary}", "", "**Learnings:**", _bullets(learnings)])

    def no_improvement(self, iteration: int, summary: str, detail: str) -> None:
        """The gate passed but the change did not beat the parent commit."""
        body = [
            f"**Summary:** {summary}",
            f"**Score:** {detail}",
            "",
            "The change passed the gate but did not beat the parent commit, so it was rolled back. "
            "Try a different approach.",
        ]
        self._entry(iteration, "[NO IMPROVEMENT]", body)

    def verify_failed(self, iteration: int, summary: str, output: str | None) -> None:
        """The gate still failed after the repairs."""
        body = [f"**Summary:** {summary}", "", "**Verification output:**", _fenced(output or "")]
        self._entry(iteration, "[VERIFY FAILED]", body)

    def grader_tampered(self, iteration: int, summary: str, paths: list[str]) -> None:
        """A locked grader file changed despite the lock; the iteration was rolled back."""
        body = [
            f"**Summary:** {summary}",
            "",
            "**Locked files changed:**",
            _bullets(paths),
            "",
            "These files are the criteria you are scored against. The whole iteration was rolled "
            "back. Improve the work being scored instead.",
        ]
        self._entry(iteration, "[GRADER LOCK]", body)

    def interrupted(self, iteration: int, signal_name: str) -> None:
        """A signal stopped the run mid-iteration; its changes were rolled back."""
        self._entry(iteration, "[INTERRUPTED]",
                    [f"**Summary:** stopped by {signal_name}; the iteration was rolled back"])

    def budget_stop(self, iteration: int, total_tokens: int) -> None:
        """``[BUDGET]``: the token budget ran out before the robot submitted."""
        self._entry(iteration, "[BUDGET]", [
            f"**Summary:** the run's token budget ran out mid-iteration ({total_tokens:,} tokens "
            "used) before a result was submitted; the iteration was rolled back",
        ])

    def error(self, iteration: int, error_class: str, message: str) -> None:
        """An exception ended the attempt."""
        self._entry(iteration, "[ERROR]", [f"**Error:** {error_class}: {message}"])

    def decision(self, iteration: int, question: str, blocking: bool, recommendation: str,
                 path: str) -> None:
        """The robot raised a decision for a human."""
        body = [
            f"**Raised:** {question}",
            f"**Blocking:** {'yes' if blocking else 'no'}",
            f"**Recommendation:** {recommendation}",
            f"**File:** {path}",
        ]
        self._entry(iteration, "[DECISION]", body, ends_iteration=False)


def _digest_line(entry: str) -> str:
    lines = [line.strip() for line in entry.splitlines() if line.strip()]
    heading = lines[0].lstrip("# ") if lines else "?"
    detail = next((line for line in lines[1:] if line.startswith("**")), "")
    return f"- {heading}: {detail[:160]}"


def bounded(text: str, recent: int = RECENT_ENTRIES, limit: int = PROMPT_CHAR_LIMIT) -> str:
    """The notes as the prompt shows them: newest ``recent`` entries in full, older digested.

    The result never exceeds about ``limit`` characters: when the recent entries alone are
    longer, each is cut from its end.
    """
    parts = _ENTRY_SPLIT.split(text)
    head, entries = parts[0], parts[1:]
    if len(entries) <= recent and len(text) <= limit:
        return text
    older, newest = entries[:-recent] if recent else entries, entries[-recent:] if recent else []
    digest = ""
    if older:
        lines = [_digest_line(entry) for entry in older[-DIGEST_LINES:]]
        if len(older) > DIGEST_LINES:
            lines.insert(0, f"- ({len(older) - DIGEST_LINES} earlier iterations omitted)")
        digest = ("\n### Older iterations (digest; full text in notes.md)\n\n"
                  + "\n".join(lines) + "\n")
    budget = max(limit - len(head) - len(digest), 400) // max(len(newest), 1)
    shown = [entry if len(entry) <= budget else entry[:budget] + "\n[entry truncated]\n"
             for entry in newest]
    return head.rstrip("\n") + "\n" + digest + "".join("\n" + entry for entry in shown)
