"""Whole files read out of a model's reply: the whole-file edit format (``--edit-format whole``).

A very small model asked for the fixed file writes it in a fenced block: under a line naming
it (``slicing.py``, ``### slicing.py``, "Here is `slicing.py`:"), with no name at all, or as
several files in one block, each after a ``# name.py`` comment line. Each block becomes one
``(path, content)`` pair:

- a named block keeps its name (named above the fence, or on the block's own first line); a
  name that is no project file but whose last part is exactly one project file's
  (``src/slicing.py`` for ``slicing.py``) is that file;
- a nameless block is the project file its text most resembles, when at least
  ``MIN_LIKENESS`` alike: a rewrite keeps most of its file, and a 0.5B model drops the name
  about half the time; a block like no file is dropped, never guessed into a new one;
- a block named after one project file but less than ``MIN_LIKENESS`` like it and at least
  that like another is that other file: such a model copies the first name it was shown
  (often the test's) above the module it rewrote;
- a fence holding nothing but a file's name names the unfenced text after it, up to the next
  fence (```` ``` ```` / ``stats.py`` / ```` ``` ```` / the file / ```` ``` ````);
- a block equal to its file's current text, blank lines and trailing spaces aside, is no
  change (the model echoed the file) and is dropped;
- shell blocks are never files, nor is a block copying the verify output the question showed
  (more like it than like any file; such a model pastes the failure under the file's name).

Two repairs for Python files, each for a mistake such a model makes often and that can only
break the file: a line importing from the file itself (``from textutil import whisper`` at the
top of textutil.py: the test's import line, copied) is dropped; and a top-level function or
class the old file had, the reply lacks, and another project file still uses (an identifier
in its code, not a string, after the reply's other writes) is kept, placed before the reply's
first definition. The model that adds ``whisper`` tends to write only ``whisper``; a rename
across files, written whole, uses the old function nowhere (a test asserting
``not hasattr(geometry, "area_of")`` names it only in a string), so it is really gone.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import PurePosixPath

from robotlab.text.file_names import named_path

MIN_LIKENESS = 0.5
"""How alike (difflib's ratio) a nameless block and a project file must be to be that file."""

_FENCE_LINE = re.compile(r"^\s*```\s*([\w+-]*)\s*$")
_SHELL = {"bash", "sh", "shell", "console", "zsh", "text", "output"}
_HEADER = re.compile(r"^#+\s*([\w./-]+\.[A-Za-z]\w*)\s*$")
_NAME_FENCE = re.compile(r"^```[\w+-]*\n\s*([\w./-]+\.[A-Za-z]\w*)\s*\n```\s*\n(?!\s*```)",
                         re.MULTILINE)
"""A fence holding only a file name, then unfenced text: rewritten as the name above a fence."""
_FIRST_LINE_NAME = re.compile(r"^\s*([\w./-]+\.(?:py|json|ya?ml|toml|cfg|ini|txt|md|sh|js|ts))\s*$")


@dataclasses.dataclass(frozen=True)
class FileBlock:
    """One file the reply writes: its path (relative to the project) and whole new content."""

    path: str
    content: str
    named: bool
    """The reply named the file; False when it was matched by likeness."""


def file_blocks(reply: str | None, files: Mapping[str, str]) -> list[FileBlock]:
    """The files ``reply`` writes, given the project's ``files`` (path to current text); the
    last block wins when two write the same file."""
    return read_reply(reply, files)[0]


def read_reply(reply: str | None, files: Mapping[str, str],
               shown: Collection[str] = ()) -> tuple[list[FileBlock], list[str]]:
    """``file_blocks``, and the project files the reply repeated unchanged (its echoes).

    ``shown``: other texts the question showed (the verify command's output); a block more
    like one of them than like any project file is a copy of it, never a file.
    """
    found: dict[str, FileBlock] = {}
    for name, body in _blocks(reply or ""):
        if not body.strip() or _copies(body, files, shown):
            continue
        block = _resolve(name, body, files)
        if block is not None:
            found[block.path] = block
    after = {**files, **{path: block.content for path, block in found.items()}}
    kept = [dataclasses.replace(block,
                                content=_keeping_used(block.path, files.get(block.path), after))
            for block in found.values()]
    same = [block for block in kept if _lines(files.get(block.path)) == _lines(block.content)]
    return [block for block in kept if block not in same], [block.path for block in same]


def _lines(text: str | None) -> list[str] | None:
    """``text``'s lines that are not blank, without trailing spaces: a reply that only moved
    blank lines (a small model's echo of the file) changes nothing."""
    return None if text is None else [line.rstrip() for line in text.splitlines() if line.strip()]


def _blocks(reply: str) -> list[tuple[str | None, str]]:
    """``(name or None, body)`` per fenced block, a block of ``# name`` sections split into them."""
    blocks: list[tuple[str | None, str]] = []
    for above, language, body in _fences(_NAME_FENCE.sub(r"\1\n```\n", reply)):
        if language.lower() not in _SHELL:
            blocks.extend(_sections(named_path(above) if above else None, body))
    return blocks


def _fences(reply: str) -> list[tuple[str, str, str]]:
    """``(line above, language, body)`` per fenced block, read line by line: a bare fence closes
    an open block, and a fence with a language opens a new block even inside one (small models
    leave fences unclosed, and then a stray closing fence must not swallow the next file)."""
    fences: list[tuple[str, str, str]] = []
    above, opened, body = "", None, []
    for line in reply.splitlines():
        fence = _FENCE_LINE.match(line)
        if fence is None:
            if opened is None:
                above = line if line.strip() else above
            else:
                body.append(line)
            continue
        if opened is not None:
            fences.append((above, opened, "\n".join(body)))
            # A fence opening inside a block: what the model meant as its name is above it.
            above = (next((line for line in reversed(body) if line.strip()), "")
                     if fence.group(1) else "")
            opened, body = None, []
            if not fence.group(1):
                continue
        opened = fence.group(1)
    return fences


def _sections(name: str | None, body: str) -> list[tuple[str | None, str]]:
    """A block whose lines include ``# a.py`` headers is one section per header (text before the
    first header belongs to ``name``); otherwise the block as it is."""
    lines = body.splitlines()
    first = _FIRST_LINE_NAME.match(lines[0]) if lines else None
    if first and not _HEADER.match(lines[0]):
        return _sections(first.group(1), "\n".join(lines[1:]))
    starts = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    if not starts:
        return [(name, body)]
    sections: list[tuple[str | None, str]] = []
    if "\n".join(lines[: starts[0]]).strip():
        sections.append((name, "\n".join(lines[: starts[0]])))
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        header = _HEADER.match(lines[start])
        assert header is not None
        sections.append((header.group(1), "\n".join(lines[start + 1: end]).strip("\n")))
    return sections


def _resolve(name: str | None, body: str, files: Mapping[str, str]) -> FileBlock | None:
    path = _project_path(name, files) if name else None
    named = path is not None
    if path is None or (path in files and _likeness(body, files[path]) < MIN_LIKENESS):
        likest = _likest(body, files)  # nameless, or named after a file it is not
        if likest is not None:
            path, named = likest, False
    if path is None:
        return None
    content = _without_self_import(path, body.rstrip("\n") + "\n")
    return FileBlock(path, content, named=named)


def _project_path(name: str, files: Mapping[str, str]) -> str:
    """``name`` as a project path: itself when a project file, else the one project file with
    the same last part, else ``name`` (a new file)."""
    name = name.removeprefix("./")
    if name in files:
        return name
    same = [path for path in files if PurePosixPath(path).name == PurePosixPath(name).name]
    return same[0] if len(same) == 1 else name


def _likest(body: str, files: Mapping[str, str]) -> str | None:
    """The project file ``body`` most resembles, if at least ``MIN_LIKENESS`` alike."""
    scored = [(_likeness(body, text), path) for path, text in files.items()]
    best = max(scored, default=(0.0, ""))
    return best[1] if best[0] >= MIN_LIKENESS else None


def _copies(body: str, files: Mapping[str, str], shown: Collection[str]) -> bool:
    """``body`` is at least ``MIN_LIKENESS`` like a text of ``shown``, and more than like any
    file."""
    copied = max((_likeness(body, text) for text in shown), default=0.0)
    return copied >= MIN_LIKENESS and copied > max(
        (_likeness(body, text) for text in files.values()), default=0.0)


def _likeness(body: str, text: str) -> float:
    return difflib.SequenceMatcher(None, text, body, autojunk=False).ratio()


def _without_self_import(path: str, content: str) -> str:
    """``content`` without lines importing from ``path``'s own module (Python files only)."""
    pure = PurePosixPath(path)
    if pure.suffix != ".py":
        return content
    module = re.escape(pure.stem)
    own = re.compile(rf"^\s*(from\s+{module}\s+import\s.*|import\s+{module})\s*$")
    return "".join(line for line in content.splitlines(keepends=True) if not own.match(line))


def _keeping_used(path: str, old: str | None, after: Mapping[str, str]) -> str:
    """``after[path]`` plus the old file's top-level definitions it dropped that another file of
    ``after`` still names (Python files that parse, before and after; otherwise as written)."""
    new = after[path]
    if old is None or not path.endswith(".py"):
        return new
    try:
        old_tree, new_tree = ast.parse(old), ast.parse(new)
    except SyntaxError:
        return new
    defined = {node.name for node in _definitions(new_tree)}
    used = _used_names({name: text for name, text in after.items() if name != path})
    lines = old.splitlines()
    kept = ["\n".join(lines[_first_line(node) - 1: node.end_lineno])
            for node in _definitions(old_tree) if node.name not in defined and used(node.name)]
    if not kept:
        return new
    new_lines = new.splitlines()
    first = min((_first_line(node) for node in _definitions(new_tree)), default=len(new_lines) + 1)
    merged = [*new_lines[: first - 1], *"\n\n\n".join(kept).splitlines(), "", "",
              *new_lines[first - 1:]]
    return "\n".join(merged).rstrip("\n") + "\n"


def _used_names(files: Mapping[str, str]) -> Callable[[str], bool]:
    """Whether a name is used in ``files``: as an identifier of a Python file that parses (a
    test asserting ``not hasattr(geometry, "area_of")`` does not use ``area_of``), anywhere
    in the text of any other file."""
    identifiers: set[str] = set()
    texts = []
    for name, text in files.items():
        try:
            tree = ast.parse(text) if name.endswith(".py") else None
        except SyntaxError:
            tree = None
        if tree is None:
            texts.append(text)
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                identifiers.add(node.id)
            elif isinstance(node, ast.Attribute):
                identifiers.add(node.attr)
            elif isinstance(node, ast.alias):
                identifiers.add(node.name.rsplit(".", 1)[-1])
    rest = "\n".join(texts)
    return lambda name: (name in identifiers
                         or re.search(rf"\b{re.escape(name)}\b", rest) is not None)


def _definitions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    return [node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    """The definition's first line, its decorators included."""
    return min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
