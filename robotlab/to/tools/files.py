"""The ``read``, ``write`` and ``edit`` tools (``--local-guards`` only).

Each takes the already-resolved absolute path (the guard chain resolves and confines it)
and returns text for the model; failures are returned as ``Error ...`` text, not raised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

READ_LINE_LIMIT = 2000


def read(path: str, args: dict[str, Any]) -> str:
    """Lines ``offset`` (1-based) to ``offset + limit`` (at most 2000) of a file."""
    target = Path(path)
    if not target.is_file():
        return f"Error: file not found: {args.get('path')}"
    try:
        lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return f"Error reading {args.get('path')}: {exc}"
    if not lines:
        return "(empty file)"
    start = max(int(args.get("offset") or 1) - 1, 0)
    count = min(int(args.get("limit") or READ_LINE_LIMIT), READ_LINE_LIMIT)
    shown = lines[start:start + count]
    body = "\n".join(shown)
    if start + count < len(lines):
        body += (
            f"\n[truncated: showed {len(shown)} of {len(lines)} lines starting at {start + 1}; "
            "use offset/limit to read more]"
        )
    return body


def write(path: str, args: dict[str, Any]) -> str:
    """Create (or overwrite; refusing is WriteGuard's job) a file with ``content``."""
    content = str(args.get("content", ""))
    try:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        return f"Error writing {args.get('path')}: {exc}"
    return f"Wrote {len(content.splitlines())} lines to {args.get('path')}"


def edit(path: str, args: dict[str, Any]) -> str:
    """Replace ``old_text`` with ``new_text`` literally (first occurrence, or all)."""
    target = Path(path)
    if not target.is_file():
        return f"Error: file not found: {args.get('path')}"
    old, new = str(args.get("old_text", "")), str(args.get("new_text", ""))
    text = target.read_text(encoding="utf-8", errors="replace")
    matches = text.count(old) if old else 2
    if matches == 0:
        return "Error: old_text not found in file"
    if matches > 1 and not args.get("replace_all"):
        count = matches if old else "many"
        return f"Error: old_text is not unique ({count} matches); add context or set replace_all"
    updated = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
    target.write_text(updated, encoding="utf-8")
    return f"Edited {args.get('path')}"


SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "read": (
        "Read a text file. Returns its lines (at most 2000 per call; use offset/limit for more).",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file path relative to the repository"},
                "offset": {"type": "integer", "description": "first line to show, 1-based"},
                "limit": {"type": "integer", "description": "how many lines to show"},
            },
            "required": ["path"],
        },
    ),
    "write": (
        "Create a file with the given content, or replace the whole content of a file you have "
        "read. For a small change to an existing file, use edit.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    "edit": (
        "Replace exact text in a file you have read. "
        "old_text must match exactly (whitespace included).",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            "required": ["path", "old_text", "new_text"],
        },
    ),
}
