"""Crash-safe file writes: a reader sees the whole old content or the whole new content.

A write takes an exclusive lock on the file's directory, writes a temp file, fsyncs it and
renames it over the target; an append is a read-modify-write under the lock. Locking the
directory (``flock`` works on a directory's descriptor) leaves no lock files behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _replace(path: Path, content: str) -> None:
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _fsync_dir(directory: Path) -> None:
    # Best effort: some filesystems refuse to open or fsync a directory.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write(path: str | os.PathLike[str], content: str) -> None:
    """Replace ``path``'s content atomically, creating parent directories."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        _replace(target, content)


def append(path: str | os.PathLike[str], text: str) -> None:
    """Append ``text`` to ``path`` atomically (read, add, rewrite under the lock)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        old = target.read_text(encoding="utf-8") if target.exists() else ""
        _replace(target, old + text)
