"""The prose eval: a floor command, then a pairwise judge (accepted text A vs new draft B).

The judge runs on the run's provider and model seam, its tokens count toward the run, its
reply is logged, and its verdict is structured (better / worse / same, with a reason).
The diff it sees names every changed file.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

from robotlab.process_groups import Supervisor
from robotlab.to.evals.score import Context, Eval, Score
from robotlab.to.git import Git
from robotlab.to.process.command import DEFAULT_TIMEOUT, run_command

JUDGE_SYSTEM = (
    "You are a meticulous editor. You compare VERSION A (the accepted text) with VERSION B "
    "(a new draft) against the objective and the spec. Judge substance (accuracy, coverage of "
    "the spec, clarity, structure), not length. Reply with JSON only: "
    '{"verdict": "better" | "worse" | "same", "reason": "<one sentence>"}, where the verdict '
    "says whether B is better than A."
)
_WORDS = re.compile(r"\b(better|worse|same)\b")


@dataclasses.dataclass(frozen=True)
class JudgeReply:
    """What the judge model said and what it cost."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


Judge = Callable[[str, str], JudgeReply]
"""``judge(system_prompt, message) -> JudgeReply``."""


def parse_verdict(reply: str) -> tuple[str, str]:
    """(verdict, reason) from a JSON reply, else from the first of better/worse/same in it."""
    match = re.search(r"\{.*\}", reply, re.DOTALL)
    if match:
        try:
            data = json.loads(match.group(0))
            verdict = str(data.get("verdict", "")).strip().lower()
            if verdict in ("better", "worse", "same"):
                return verdict, str(data.get("reason", ""))
        except (ValueError, AttributeError):
            pass
    word = _WORDS.search(reply.lower())
    return (word.group(1) if word else "same"), reply.strip()[:300]


class ProseEval(Eval):
    """Floor, then pairwise judgement of the changed files."""

    scored = True

    def __init__(
        self,
        judge: Judge,
        spec: str | None = None,
        floor: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        supervisor: Supervisor | None = None,
    ) -> None:
        self.judge = judge
        self.spec = spec
        self.floor = floor
        self.timeout = timeout
        self.supervisor = supervisor

    def protected_paths(self) -> list[str]:
        """The spec the judge measures against."""
        return [self.spec] if self.spec else []

    def score(self, context: Context) -> Score:
        """Floor first (a failure is ``worse`` without a judge call), then the judge."""
        floor_ok, output = True, None
        if self.floor:
            started = time.monotonic()
            result = run_command(self.floor, context.work_dir, self.timeout, self.supervisor)
            if context.on_command is not None:
                context.on_command("floor", self.floor, result, time.monotonic() - started)
            floor_ok, output = result.passed, result.output
        if not floor_ok:
            return Score(False, False, detail="floor=false judge=worse", output=output)
        verdict, reason, reply = self._compare(context)
        detail = f"floor={str(floor_ok).lower()} judge={verdict}"
        if reason:
            detail += f" ({reason[:200]})"
        return Score(
            True, verdict == "better", False, None, detail, output,
            reply.input_tokens if reply else 0, reply.output_tokens if reply else 0,
            reply.text if reply else None,
        )

    def _compare(self, context: Context) -> tuple[str, str, JudgeReply | None]:
        git = Git(context.work_dir)
        files = git.changed_vs_worktree(context.previous_ref)
        if not files:
            return "same", "no file changed", None
        old = _joined(files, lambda f: git.show(context.previous_ref, f))
        new = _joined(files, lambda f: _read(Path(context.work_dir) / f))
        if not _bodies(old) and _bodies(new):
            return "better", "new text where there was none", None
        reply = self.judge(JUDGE_SYSTEM, self._message(context, old, new))
        verdict, reason = parse_verdict(reply.text)
        return verdict, reason, reply

    def _message(self, context: Context, old: str, new: str) -> str:
        parts = [f"OBJECTIVE: {context.objective}"]
        spec = Path(context.work_dir) / self.spec if self.spec else None
        if spec and spec.is_file():
            parts.append("SPEC:\n" + _read(spec))
        parts += [f"VERSION A (accepted):\n{old}", f"VERSION B (new draft):\n{new}"]
        parts.append("Is VERSION B better, worse or the same as VERSION A? "
                     "Reply with the JSON verdict.")
        return "\n\n".join(parts)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _joined(files: list[str], content: Callable[[str], str]) -> str:
    return "\n\n".join(f"=== {name} ===\n{content(name)}" for name in files)


def _bodies(text: str) -> str:
    """The text without the file-name headers (to tell 'no old text' from 'old text')."""
    return re.sub(r"^=== .* ===$", "", text, flags=re.MULTILINE).strip()
