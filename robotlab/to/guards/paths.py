"""Where a tool's path argument points, and that it stays inside the repository.

A relative path is joined to the repository root; ``/name`` with a single segment is read
as ``<root>/name`` (small models anchor paths at ``/``); ``..`` is collapsed. A path whose
real location (symlinks followed) is outside the root is refused by the tools.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def raw_path(args: dict[str, Any]) -> str | None:
    """The ``path`` (or ``file_path``) argument when it is a non-empty string."""
    value = args.get("path", args.get("file_path"))
    return value if isinstance(value, str) and value else None


def resolve(root: str | Path, raw: str) -> str:
    """The absolute, normalized path ``raw`` names, relative to ``root``."""
    root = str(root)
    if raw.startswith("/") and raw.count("/") == 1 and not os.path.exists(raw):
        return os.path.normpath(os.path.join(root, raw[1:]))
    return os.path.normpath(os.path.join(root, raw))


def inside(root: str | Path, path: str) -> bool:
    """True when ``path`` (after following symlinks) is within ``root`` and not in ``.git``."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root + os.sep):
        return False
    return ".git" not in Path(os.path.relpath(real, real_root)).parts


def relative(root: str | Path, path: str) -> str:
    """``path`` relative to ``root`` (for messages)."""
    return os.path.relpath(path, root)
