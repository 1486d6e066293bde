"""BoundaryError: what cannot cross a process boundary is refused in the sender, named and
placed."""

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
    assert to_plain(payload) == {"a": [1, 2.5, None, True, b"x", ["t", 1]],
                                 3: {"m": {"kind": "model", "n": 1}}}


@pytest.mark.parametrize(
    ("payload", "path", "type_name"),
    [
        ({"task": {"steps": [1, lambda: 2]}}, "content['task']['steps'][1]", "function"),
        ({"log": io.StringIO()}, "content['log']", "StringIO"),
        ([1, {2, 3}], "content[1]", "set"),
        ({"n": 2**70}, "content['n']", "int"),
    ],
)
def test_the_error_names_the_type_and_where_it_sits(payload: object, path: str,
                                                    type_name: str) -> None:
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


def test_a_kept_packer_packs_what_packb_packs_on_every_thread() -> None:
    import threading

    import msgpack

    from robotlab.bus.wire.plain_data import KEEP_BUFFER, ThreadPacker

    packs = ThreadPacker()
    values = [{"id": "a.1", "to": "bob", "n": i, "raw": b"\x00" * i} for i in range(50)]
    results: dict[int, list[bytes]] = {}

    def pack_all(key: int) -> None:
        results[key] = [packs.pack(v) for v in values]

    threads = [threading.Thread(target=pack_all, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = [msgpack.packb(v, use_bin_type=True) for v in values]
    assert all(results[k] == expected for k in range(4))
    big = b"x" * (KEEP_BUFFER + 1)
    assert packs.pack(big) == msgpack.packb(big, use_bin_type=True)
    assert packs._local.slot.packer is None  # its grown buffer is not kept
    assert packs.pack({"after": 1}) == msgpack.packb({"after": 1})


def test_a_default_hook_that_packs_gets_a_packer_of_its_own() -> None:
    import msgpack

    from robotlab.bus.wire.plain_data import ThreadPacker

    class Inner:
        pass

    packs: ThreadPacker

    def default(value: object) -> object:
        return {"nested": packs.pack([1, 2, 3])}  # a nested pack on the same thread, mid-pack

    packs = ThreadPacker(default=default)
    value = {"a": "before", "b": Inner(), "c": "after"}
    expected = msgpack.packb({"a": "before", "b": {"nested": msgpack.packb([1, 2, 3])},
                              "c": "after"},
                             use_bin_type=True)
    assert packs.pack(value) == expected
    with pytest.raises(TypeError):
        ThreadPacker().pack({"x": Inner()})
