"""BoundaryError: what cannot cross a process boundary is refused in the sender, named and placed."""

from __future__ import annotations

import io

import pytest

from robotlab import bus
from robotlab.bus import to_plain
from robotlab.errors import BoundaryError


class Dumpable:
    def to_dict(self) -> dict:
        return {"kind": "model", "n": 1}


def test_plain_data_passes_and_models_cross_through_their_dump() -> None:
    payload = {"a": [1, 2.5, None, True, b"x", ("t", 1)], 3: {"m": Dumpable()}}
    assert to_plain(payload) == {"a": [1, 2.5, None, True, b"x", ["t", 1]], 3: {"m": {"kind": "model", "n": 1}}}


@pytest.mark.parametrize(
    ("payload", "path", "type_name"),
    [
        ({"task": {"steps": [1, lambda: 2]}}, "content['task']['steps'][1]", "function"),
        ({"log": io.StringIO()}, "content['log']", "StringIO"),
        ([1, {2, 3}], "content[1]", "set"),
        ({"n": 2**70}, "content['n']", "int"),
    ],
)
def test_the_error_names_the_type_and_where_it_sits(payload: object, path: str, type_name: str) -> None:
    with pytest.raises(BoundaryError) as info:
        to_plain(payload, "content")
    assert info.value.path == path
    assert type_name in info.value.type_name
    assert path in str(info.value)


def test_cycles_and_bad_keys_are_refused() -> None:
    looped: list = []
    looped.append(looped)
    with pytest.raises(BoundaryError, match="cycle"):
        to_plain(looped)
    with pytest.raises(BoundaryError, match="key of type tuple"):
        to_plain({("a", "b"): 1})


def test_send_raises_before_anything_reaches_the_broker() -> None:
    with bus.connect(name="alice") as alice:
        before = alice.admin("stats")["routed"]
        with pytest.raises(BoundaryError, match=r"content\['callback'\] is a function"):
            alice.send("bob", {"callback": print})
        assert alice.admin("stats")["routed"] == before
