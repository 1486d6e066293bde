"""JSON lines over a socketpair: the framing the fork server and robot-to's children share."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from robotlab.ipc import json_lines


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_objects_round_trip_one_per_line(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    json_lines.send(a, {"cmd": "run", "n": 1})
    json_lines.send(a, {"cmd": "exit"})
    reader = json_lines.LineReader(b)
    assert reader.next() == {"cmd": "run", "n": 1}
    assert reader.next() == {"cmd": "exit"}


def test_a_line_split_across_reads_is_joined(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    line = json_lines.encode({"text": "x" * 1000})
    reader = json_lines.LineReader(b)
    a.sendall(line[:10])
    assert reader.next(timeout=0.05) is None  # half a line is not a message yet
    a.sendall(line[10:])
    assert reader.next(timeout=5) == {"text": "x" * 1000}


def test_values_json_cannot_hold_use_the_default(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    json_lines.send(a, {"path": object()}, default=lambda value: "unprintable")
    assert json_lines.LineReader(b).next() == {"path": "unprintable"}


def test_a_closed_peer_is_end_of_file(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(b'{"half": ')
    a.close()
    with pytest.raises(EOFError):
        json_lines.LineReader(b).next(timeout=5)


@pytest.mark.parametrize("line", [b"[1, 2]\n", b"not json\n", b"null\n"])
def test_anything_but_one_object_is_refused(pair: tuple[socket.socket, socket.socket],
                                            line: bytes) -> None:
    a, b = pair
    a.sendall(line)
    with pytest.raises(ValueError):
        json_lines.LineReader(b).next(timeout=5)


def test_a_line_without_end_cannot_grow_without_bound(pair: tuple[socket.socket, socket.socket],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_lines, "MAX_LINE", 100)
    a, b = pair
    a.sendall(b"x" * 200)
    with pytest.raises(ValueError, match="longer than 100"):
        json_lines.LineReader(b).next(timeout=5)
