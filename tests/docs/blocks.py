"""The code blocks of the documentation, and the marks that say how the doc tests treat them.

A fenced block labelled ``python``/``py`` or ``bash``/``sh``/``shell``/``console`` is run by
``test_doc_examples.py`` unless an HTML comment right before it (blank lines between are fine)
says why it cannot run::

    <!-- not-run: needs a llama.cpp server and a model file -->

A page may also carry, anywhere, marks that set up what its prose says is there:

- ``<!-- doc-setup: broker -->``: a broker is running; ``ROBOT_LAB_BROKER`` names it.
- ``<!-- doc-model: [{"content": "..."}] -->``: the first turns the scripted model answers
  (JSON, the ``robotlab.testing`` script format); every later request gets ``"ok"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = {"python": "python", "py": "python", "bash": "shell", "sh": "shell", "shell": "shell",
             "console": "shell"}
SETUPS = {"broker"}
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_MARK = re.compile(r"^\s*<!--\s*(not-run|doc-setup|doc-model)\b:?(.*?)-->\s*$")
_ANY_MARK = re.compile(r"<!--\s*(not-run|doc-\w+)")


@dataclass(frozen=True)
class Block:
    """One runnable-language block: where it is, what it says, and why it is not run (if so)."""

    page: Path
    line: int
    """The 1-based line of the block's first line of code (the one after the fence)."""
    language: str
    """``python`` or ``shell``."""
    source: str
    not_run: str | None = None

    @property
    def label(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"


@dataclass
class Page:
    """A documentation page's blocks and page marks; ``problems`` lists malformed marks."""

    path: Path
    blocks: list[Block] = field(default_factory=list)
    setups: set[str] = field(default_factory=set)
    model_turns: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def runnable(self) -> list[Block]:
        return [b for b in self.blocks if b.not_run is None]


def pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def read_page(path: Path) -> Page:
    """Parse ``path``: its runnable-language blocks with their marks, and its page marks."""
    page = Page(path)
    lines = path.read_text().splitlines()
    pending: tuple[int, str] | None = None  # a not-run mark waiting for its block
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence:
            end = _closing(lines, i)
            language = LANGUAGES.get(fence.group(2))
            if language:
                source = "\n".join(line[len(fence.group(1)):] for line in lines[i + 1:end])
                page.blocks.append(Block(path, i + 2, language, source, pending[1] if pending
                                         else None))
            elif pending:
                page.problems.append(f"{path.name}:{pending[0]}: not-run mark before a "
                                     f"{fence.group(2) or 'plain'} block")
            pending = None
            i = end + 1
            continue
        pending = _read_mark(page, lines[i], i + 1, pending)
        i += 1
    if pending:
        page.problems.append(f"{path.name}:{pending[0]}: not-run mark with no block after it")
    return page


def _closing(lines: list[str], start: int) -> int:
    for j in range(start + 1, len(lines)):
        if lines[j].strip() == "```":
            return j
    raise ValueError(f"unclosed code block at line {start + 1}")


def _read_mark(page: Page, line: str, number: int,
               pending: tuple[int, str] | None) -> tuple[int, str] | None:
    """Record a page mark; return the not-run mark still waiting for its block."""
    mark = _MARK.match(line)
    if not mark:
        if _ANY_MARK.search(line):
            page.problems.append(
                f"{page.path.name}:{number}: unknown or malformed mark: {line.strip()}")
        return pending if not line.strip() else None
    kind, value = mark.group(1), mark.group(2).strip()
    if kind == "not-run":
        if not value:
            page.problems.append(f"{page.path.name}:{number}: a not-run mark needs its reason")
        return (number, value)
    if kind == "doc-setup":
        unknown = {v.strip() for v in value.split(",")} - SETUPS
        page.problems += [f"{page.path.name}:{number}: unknown setup {u!r}"
                          for u in sorted(unknown)]
        page.setups |= {v.strip() for v in value.split(",")} & SETUPS
    else:
        try:
            page.model_turns += json.loads(value)
        except json.JSONDecodeError as exc:
            page.problems.append(f"{page.path.name}:{number}: doc-model is not JSON: {exc}")
    return pending
