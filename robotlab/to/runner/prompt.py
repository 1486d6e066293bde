"""The per-iteration system prompt, and the nudge and repair messages.

Sections, in order: role, prior work (bounded notes), project files (with their contents
when the project is small), answered decisions, task, score feedback, verification, how to
call the file tools (local guards), decisions, required submit, commit failure, stop
condition. Headings are stable: tests and users key off them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from robotlab.to.record.decisions import Decision
from robotlab.to.record.notes import bounded

FILE_LIST_LIMIT = 200
# A project this small is shown whole: a small model that sees the code edits it at once,
# instead of spending a model call (the whole prompt again) per file read.
SMALL_PROJECT_FILES = 12
SMALL_PROJECT_CHARS = 6000

NUDGE = (
    "You ended without calling submit_iteration_result. Call it now: success=true with a "
    "one-sentence summary and key_changes if you made progress, or success=false with what "
    "blocked you. Do no further work first."
)


@dataclasses.dataclass
class PromptInputs:
    """Everything the prompt of one iteration depends on."""

    objective: str
    iteration: int
    notes_path: str
    notes: str
    files: list[str] = dataclasses.field(default_factory=list)
    decisions: list[Decision] = dataclasses.field(default_factory=list)
    scored: bool = False
    last_score_value: float | None = None
    target: float | None = None
    iterations_since_improvement: int = 0
    verify_command: str | None = None
    decisions_enabled: bool = True
    commit_failure: str | None = None
    stop_when: str | None = None
    locked: list[str] = dataclasses.field(default_factory=list)
    file_texts: dict[str, str] = dataclasses.field(default_factory=dict)
    """The contents of a small project's files, shown in the prompt (``small_project``)."""
    local_tools: bool = False
    """The robot has read/write/edit/bash (local guards): the prompt shows how to call them."""


def small_project(root: str | Path, files: list[str]) -> dict[str, str]:
    """Every tracked file's text when there are at most ``SMALL_PROJECT_FILES`` of them, all
    text, together at most ``SMALL_PROJECT_CHARS`` characters; otherwise ``{}``."""
    if not files or len(files) > SMALL_PROJECT_FILES:
        return {}
    texts: dict[str, str] = {}
    for name in files:
        try:
            texts[name] = (Path(root) / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return {}
    return texts if sum(map(len, texts.values())) <= SMALL_PROJECT_CHARS else {}


def _role(p: PromptInputs) -> str:
    return (
        f"You are an autonomous software engineer working on this objective: **{p.objective}**\n\n"
        f"You are on iteration {p.iteration}. Make ONE focused improvement per iteration."
    )


def _prior_work(p: PromptInputs) -> str:
    notes = bounded(p.notes).strip()
    if not notes:
        # No path on a first iteration: a small model reads it as the folder the code is in.
        return "## Prior Work (notes.md)\n\n(no iterations yet)"
    return (
        "## Prior Work (notes.md)\n\nRead these notes from earlier iterations first. Do NOT modify "
        f"notes.md; the orchestrator writes it.\n\nFile path: {p.notes_path}\n\n```\n{notes}\n```"
    )


def _files(p: PromptInputs) -> str:
    if not p.files:
        return ""
    if p.file_texts:
        shown = "\n\n".join(f"### {name}\n\n```\n{text.rstrip()}\n```"
                             for name, text in p.file_texts.items())
        return (
            "## Project Files\n\nThe whole project, every file with its current content (paths are "
            f"relative to the repository root; you need not read them again):\n\n{shown}"
        )
    listed = "\n".join(f"- {name}" for name in p.files[:FILE_LIST_LIMIT])
    hidden = len(p.files) - FILE_LIST_LIMIT
    more = f"\n- ... and {hidden} more" if hidden > 0 else ""
    return (
        "## Project Files\n\nRead these files directly instead of rediscovering them; files you "
        f"create show up here next iteration.\n\n{listed}{more}"
    )


def _answered(p: PromptInputs) -> str:
    if not p.decisions:
        return ""
    lines = ["## Answered Decisions", "", "Act on these answers and do not raise them again.", ""]
    for decision in p.decisions:
        answer = decision.resolution or f"(resolved — see {decision.path})"
        lines += [f"- **{decision.question}**", f"  → Human decision: {answer}"]
    return "\n".join(lines)


def _task(p: PromptInputs) -> str:
    locked = ""
    if p.locked:
        locked = ("\n5. These grader files are locked (read and run them, never change them): "
                  + ", ".join(p.locked))
    return (
        "## Your Task\n\n1. Make one focused change toward the objective.\n2. Stop any background "
        "process you started.\n3. Run the project's tests, build and linters if they exist.\n4. A "
        "complete no-op (no file changes and no new learnings) is not success." + locked
    )


def _score(p: PromptInputs) -> str:
    if not p.scored:
        return ""
    body = []
    if p.last_score_value is not None:
        target = f" (target: {float(p.target)})" if p.target is not None else ""
        body.append(f"Best score committed so far: {p.last_score_value}{target}.")
    if p.iterations_since_improvement > 0:
        body.append(
            f"The last {p.iterations_since_improvement} iteration(s) did not improve and were "
            "rolled back. A similar change will be rolled back again — try a DIFFERENT approach "
            "now."
        )
    elif p.iteration > 1:
        body.append("Your last change improved the result and was committed. Build on it.")
    return "## Score Feedback\n\n" + "\n".join(body) if body else ""


def _verification(p: PromptInputs) -> str:
    if not p.verify_command:
        return ""
    return (
        "## Verification — how this iteration is judged\n\nAfter your change the orchestrator "
        "runs this EXACT command and commits only if it exits 0; otherwise everything is rolled "
        f"back:\n\n    {p.verify_command}\n\nRun it yourself and make it pass BEFORE calling "
        "submit_iteration_result."
    )


def _tool_calls(p: PromptInputs) -> str:
    if not p.local_tools:
        return ""
    return (
        "## How to Call Tools\n\nThe tools are: read, write, edit, bash, submit_iteration_result "
        "(the functions in the project's code are not tools). Call one tool at a time, by its "
        "exact name. If you cannot make a native tool call, reply with only the call as one JSON "
        "object, in this shape (put the real path and text in place of the capitals):\n\n"
        '    {"name": "edit", "arguments": {"path": "PATH", "old_text": "OLD LINES", '
        '"new_text": "NEW LINES"}}\n\n'
        "Change an existing file with edit (OLD LINES copied exactly from the file), create a new "
        "one with write, run commands with bash. To replace a whole file, you may instead reply "
        "with its path on one line and its complete new content in a fenced code block below it. "
        "Finish with:\n\n"
        '    {"name": "submit_iteration_result", "arguments": {"success": true, '
        '"summary": "WHAT YOU CHANGED"}}'
    )


def _ask(p: PromptInputs) -> str:
    if not p.decisions_enabled:
        return ""
    return (
        "## When to Ask for a Human Decision\n\nYou have a `request_decision` tool. Use it only "
        "for choices that are irreversible or hard to reverse, set a public contract, are "
        "genuinely ambiguous about intent, or fall outside the objective's scope. Always include "
        "your recommendation (your lean). Set blocking=true only when work cannot continue without "
        "the answer. Do not use it for routine engineering choices; prefer progress over asking."
    )


def _submit(p: PromptInputs) -> str:
    return (
        "## Required: Submit Your Result\n\nYou MUST call `submit_iteration_result` as your FINAL "
        "action, with success, a one-sentence summary, key_changes and key_learnings (and, for "
        "conventional commits, a type such as feat/fix/docs/refactor/test/chore and an optional "
        "scope)."
    )


def _commit_failure(p: PromptInputs) -> str:
    if not p.commit_failure:
        return ""
    return (
        "## ⚠ Previous Commit Failure — Repair Required\n\nThe previous iteration succeeded but "
        f"git commit failed with:\n\n```\n{p.commit_failure}\n```\n\nFix the uncommitted changes "
        "first, then submit with success=true."
    )


def _stop(p: PromptInputs) -> str:
    if not p.stop_when:
        return ""
    return (
        "## Stop Condition\n\nAfter your work, check whether this condition is met: "
        f'"{p.stop_when}". '
        "If it is met AND this iteration was successful, set should_fully_stop=true."
    )


_SECTIONS = (_role, _prior_work, _files, _answered, _task, _score, _verification, _tool_calls,
             _ask, _submit, _commit_failure, _stop)


def system_prompt(inputs: PromptInputs) -> str:
    """The whole system prompt of one iteration."""
    return "\n\n".join(part for part in (section(inputs) for section in _SECTIONS) if part)


def repair_message(verify_command: str | None, output: str | None) -> str:
    """What the same robot is told when its claimed success failed the gate."""
    what = f"running `{verify_command}`" if verify_command else "the verification gate"
    return (
        f"Your changes did not pass verification: {what} failed.\n\n```\n{output or ''}\n```\n\n"
        "Fix the code so it passes, then call submit_iteration_result again. Build on your "
        "existing work instead of starting over."
    )
