"""The history file's reader, fuzzed: whatever a file holds, opening it gives the entries it can
read or a ConfigError, never another exception; and a file cut anywhere (a kill mid-write) opens
with every entry whose line was whole."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robotlab import ConfigError
from robotlab.history.entries import ExitEntry, ReplyEntry, RewriteEntry, SystemEntry, TaskEntry
from robotlab.history.log import HistoryLog
from tests.json_values import json_values

FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

fields = st.sampled_from(["kind", "run", "at", "content", "reasoning", "status", "reply", "error",
                          "messages", "reason", "id", "name", "arguments", "model"])
kinds = st.sampled_from(["task", "reply", "exit", "rewrite", "system", "tool_call",
                         "tool_result", "dream"])


@st.composite
def entry_like(draw: st.DrawFn) -> dict[str, Any]:
    """A dict shaped like an entry, its fields' values of any JSON type."""
    entry = draw(st.dictionaries(fields, json_values, max_size=5))
    if draw(st.booleans()):
        entry["kind"] = draw(kinds)
    return entry


def opens_or_refuses(text: str | bytes) -> HistoryLog | None:
    """Open a history file holding ``text``: the log, or None when it is refused as it should
    be, with a ConfigError."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.history"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        try:
            log = HistoryLog.open(path, "fuzzed")
            log.messages()
            return log
        except ConfigError:
            return None


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_open_as_a_log_or_a_config_error(data: bytes) -> None:
    opens_or_refuses(data)


@FUZZ
@given(st.lists(entry_like(), max_size=6), st.sampled_from([1, 2]))
def test_entries_of_any_shape_open_as_a_log_or_a_config_error(entries: list[dict[str, Any]],
                                                              version: int) -> None:
    if version == 2:
        text = "\n".join([json.dumps({"format": 2, "robot": "r"}), *map(json.dumps, entries)])
    else:
        text = json.dumps({"format": 1, "robot": "r", "entries": entries})
    opens_or_refuses(text + "\n")


def test_deep_nesting_is_refused_not_a_crash() -> None:
    assert opens_or_refuses('{"format": 2}\n' + "[" * 100_000 + "\n{}\n") is None


@FUZZ
@given(st.integers(min_value=0, max_value=10_000))
def test_a_file_cut_anywhere_opens_with_every_whole_line(cut: int) -> None:
    log = HistoryLog(entries=[  # fixed times: the same file, and cut, every time
        SystemEntry(run=1, at=1.0, content="S"), TaskEntry(run=1, at=2.0, content="one plus one?"),
        ReplyEntry(run=1, at=3.0, content="two"),
        ExitEntry(run=1, at=4.0, status="completed", reply="two"),
        RewriteEntry(at=5.0, reason="replace", messages=({"role": "user", "content": "ünïcode"},)),
        TaskEntry(run=2, at=6.0, content="ünïcode ⅱ"), ExitEntry(run=2, at=7.0, status="failed")])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "whole.history"
        log.path = path
        log.save()
        data = path.read_bytes()
        cut = cut % (len(data) + 1)
        header_end = data.index(b"\n") + 1
        path.write_bytes(data[:cut])
        if cut < header_end:
            return  # not even the header: a file a robot never wrote (refused, or empty)
        whole_lines = data[header_end:cut].count(b"\n")
        loaded = HistoryLog.open(path, "again")
        # every whole line is read; a torn last line is dropped, or read if it lacks only its
        # newline; a run left without its exit is closed as interrupted
        assert list(loaded.entries)[:whole_lines] == list(log.entries)[:whole_lines]
        assert len(loaded.entries) <= whole_lines + 2
        assert HistoryLog.open(path, "again").entries == loaded.entries  # written whole
