"""Checkpoints: the first write or edit of a file in an iteration snapshots it first.

Snapshots go to ``<run dir>/checkpoints/<flattened path>``; a file that did not exist yet
leaves an empty ``<flattened>.absent`` marker. I/O errors are ignored: a snapshot is a
convenience for a human looking back, never a reason to fail the robot's call.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

NAME_LIMIT = 200


def flatten(path: str) -> str:
    """Every character outside ``[A-Za-z0-9._-]`` becomes ``_``; the last 200 are kept."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", path)[-NAME_LIMIT:]


class Checkpoints:
    """First-touch snapshots within one iteration."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._seen: set[str] = set()

    def touch(self, path: str) -> None:
        """Snapshot ``path`` if this iteration has not touched it before."""
        if path in self._seen:
            return
        self._seen.add(path)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            target = self.directory / flatten(path)
            if Path(path).is_file():
                shutil.copyfile(path, target)
            else:
                target.with_name(target.name + ".absent").touch()
        except OSError:
            return
