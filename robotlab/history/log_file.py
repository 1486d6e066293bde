"""A conversation log's file: a header line, then one JSON line per entry, appended at every step.

::

    {"format": 2, "robot": "bob"}
    {"kind": "task", "run": 1, "at": 1764476000.1, "content": "one plus one?"}
    {"kind": "reply", "run": 1, "at": 1764476001.4, "content": "2", ...}

A step appends its own lines and fsyncs, so it costs its own bytes however long the log has
grown. A process killed mid-append leaves at most a torn last line: reading drops it (with a
warning), and the log, opened again, rewrites the file whole (to a temp file, renamed over it)
before it appends. Format 1, one JSON document ``{"format": 1, "robot": ..., "entries": [...]}``
rewritten whole at every step, is still read, and written as format 2 when it is opened.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from robotlab.errors import ConfigError
from robotlab.history.entries import Entry, entry_from_dict

__all__ = ["FORMAT", "append", "entry_line", "read", "write_whole"]

log = logging.getLogger("robotlab.history")

FORMAT = 2
"""The version of the file written; format 1 is also read, any other is refused."""


def entry_line(entry: Entry) -> str:
    """One entry as its line of the file (no newline)."""
    return json.dumps(entry.to_dict(), ensure_ascii=False, default=str)


def read(path: str | os.PathLike[str]) -> tuple[str, list[Entry]]:
    """The robot's name and the entries saved at ``path``.

    Raises:
        ConfigError: unreadable, not JSON, a line inside the file is not an entry, or another
            ``format``.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the history file {str(path)!r}: {exc}") from exc
    first, _, rest = data.partition(b"\n")
    try:
        header = _json(first)
    except (ValueError, RecursionError):
        header = None  # format 1 spreads its document over many lines
    if isinstance(header, dict) and header.get("format") == FORMAT:
        return str(header.get("robot") or "robot"), _lines(path, rest)
    try:
        document = _json(data)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"cannot read the history file {str(path)!r}: "
                          f"{_reason(exc)}") from exc
    if not isinstance(document, dict) or document.get("format") != 1:
        found = document.get("format") if isinstance(document, dict) else None
        raise ConfigError(f"{str(path)!r} is not a robotlab history of format {FORMAT} or 1 "
                          f"(format: {found!r})")
    items = document.get("entries") or []
    if not isinstance(items, list):
        raise ConfigError(f"history file {str(path)!r}: its entries are not a list")
    return str(document.get("robot") or "robot"), [entry_from_dict(item) for item in items]


def _json(data: bytes) -> object:
    """``data`` decoded as UTF-8 and parsed as JSON.

    Raises:
        ValueError: not UTF-8, or not JSON.
        RecursionError: nested deeper than the parser goes.
    """
    return json.loads(data.decode("utf-8"))


def _reason(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _lines(path: str | os.PathLike[str], data: bytes) -> list[Entry]:
    """The entries of format 2's lines; a torn last line (no newline after it) is dropped."""
    lines = data.split(b"\n")
    entries: list[Entry] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            entries.append(entry_from_dict(_json(line)))
        except (ValueError, RecursionError, ConfigError) as exc:
            if index == len(lines) - 1:  # the last line, never finished
                log.warning("history file %s: its last line was cut off mid-write (%d bytes); "
                            "it is dropped", path, len(line))
                break
            raise ConfigError(f"history file {str(path)!r}, line {index + 2}: {_reason(exc)}; "
                              "the lines before it are readable entries, one JSON object a "
                              "line") from exc
    return entries


def write_whole(path: Path, robot: str, entries: Iterable[Entry]) -> None:
    """Write the file anew, atomically (temp file, fsync, rename).

    Raises:
        OSError: the file cannot be written.
    """
    lines = [json.dumps({"format": FORMAT, "robot": robot}), *map(entry_line, entries)]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def append(path: Path, entries: Iterable[Entry]) -> None:
    """Append entries' lines and fsync.

    Raises:
        OSError: they could not all be written (a torn line may be left: write the file whole
            next).
    """
    text = "".join(entry_line(entry) + "\n" for entry in entries)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
