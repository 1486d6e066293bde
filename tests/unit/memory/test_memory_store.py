"""Memory reads, writes, waits and reserved keys (spec section 22)."""

from __future__ import annotations

import threading
import time

import pytest

import robotlab.memory.memory as memory_mod
from robotlab.errors import AwaitTimeout
from robotlab.memory.memory import RESERVED_KEYS, Memory, MemoryStore, create_memory
from robotlab.memory.state import ResponseCache, StateProxy


def test_set_returns_value_and_get_reads_it() -> None:
    memory = Memory()
    assert memory.set("k", 5) == 5
    assert memory.get("k") == 5
    assert memory["k"] == 5


def test_none_is_stored_and_counts_as_present() -> None:
    memory = Memory()
    memory.set("k", None)
    assert memory.has_key("k")
    assert "k" in memory
    assert memory.keys() == ["k"]


def test_missing_key_reads_none() -> None:
    assert Memory().get("nope") is None
    assert Memory()["nope"] is None


def test_get_several_keys_returns_present_ones_only() -> None:
    # Acceptance check 3 (last part).
    memory = Memory()
    memory.set("x", 1)
    assert memory.get("x", "y") == {"x": 1}


def test_get_needs_a_key() -> None:
    with pytest.raises(TypeError):
        Memory().get()


def test_wait_times_out_with_the_ruby_message() -> None:
    # Acceptance check 1, first half: about 0.1 s, then AwaitTimeout.
    memory = Memory()
    started = time.monotonic()
    with pytest.raises(AwaitTimeout, match=r"^Timeout waiting for :k after 0.1 seconds$"):
        memory.get("k", wait=0.1)
    elapsed = time.monotonic() - started
    assert 0.09 <= elapsed < 0.5


def test_wait_label_drops_a_zero_fraction() -> None:
    with pytest.raises(AwaitTimeout, match="after 0 seconds"):
        Memory().get("k", wait=0.0)


def test_wait_returns_a_value_set_later_by_another_thread() -> None:
    # Acceptance check 1, second half: a set 50 ms later wakes the waiting get.
    memory = Memory()
    timer = threading.Timer(0.05, memory.set, args=("k", 5))
    timer.start()
    started = time.monotonic()
    assert memory.get("k", wait=2) == 5
    assert time.monotonic() - started < 1.0
    timer.join()


def test_wait_true_blocks_until_set() -> None:
    memory = Memory()
    threading.Timer(0.02, memory.set, args=("k", "v")).start()
    assert memory.get("k", wait=True) == "v"


def test_wait_on_several_keys_waits_for_each_in_turn() -> None:
    memory = Memory()
    memory.set("a", 1)
    threading.Timer(0.03, memory.set, args=("b", 2)).start()
    assert memory.get("a", "b", wait=1) == {"a": 1, "b": 2}


def test_wait_on_several_keys_names_the_missing_one() -> None:
    memory = Memory()
    memory.set("a", 1)
    with pytest.raises(AwaitTimeout, match=":b after"):
        memory.get("a", "b", wait=0.05)


def test_present_key_returns_at_once_even_when_waiting() -> None:
    memory = Memory()
    memory.set("k", 0)
    assert memory.get("k", wait=0.0) == 0


def test_cache_cannot_be_assigned() -> None:
    # Acceptance check 3.
    memory = Memory()
    with pytest.raises(ValueError, match="cache"):
        memory["cache"] = object()


def test_reserved_keys_cannot_be_deleted() -> None:
    # Acceptance check 3.
    memory = Memory()
    for key in ("data", "results", "messages", "session_id", "cache"):
        with pytest.raises(ValueError, match=f"reserved key: {key}"):
            memory.delete(key)


def test_reserved_keys_are_present_but_not_listed() -> None:
    memory = Memory()
    memory.set("k", 1)
    assert all(memory.has_key(k) for k in RESERVED_KEYS)
    assert memory.keys() == ["k"]
    assert memory.all_keys() == [*RESERVED_KEYS, "k"]


def test_data_is_a_state_proxy_with_attribute_access() -> None:
    memory = Memory(data={"category": None})
    memory.data["category"] = "billing"
    assert memory.data.category == "billing"
    memory.data.resolved = True
    assert memory["data"] == {"category": "billing", "resolved": True}
    assert isinstance(memory["data"], StateProxy)
    with pytest.raises(AttributeError):
        _ = memory.data.missing


def test_assigning_data_replaces_it_silently() -> None:
    memory = Memory()
    seen = []
    memory.subscribe("data", callback=seen.append)
    memory["data"] = {"a": 1}
    memory.flush(1)
    assert memory.data.a == 1
    assert seen == []


def test_results_are_a_copy() -> None:
    memory = Memory()
    memory.append_result("r1")
    memory.results.append("not stored")
    assert memory.results == ["r1"]
    memory.append_result("r2")
    assert memory.results_from(1) == ["r2"]
    memory.set_results(["x"])
    assert memory["results"] == ["x"]


def test_session_id_and_messages() -> None:
    memory = Memory(session_id="s1", messages=[{"role": "user", "content": "hi"}])
    assert memory["session_id"] == "s1"
    memory["session_id"] = "s2"
    assert memory.session_id == "s2"
    assert memory.messages == [{"role": "user", "content": "hi"}]


def test_cache_follows_enable_cache() -> None:
    assert isinstance(Memory().cache, ResponseCache)
    assert Memory(enable_cache=False)["cache"] is None
    cache = Memory().cache
    assert cache.fetch("q", lambda: "a") == "a"
    assert cache.fetch("q", lambda: "other") == "a"


def test_merge_sets_every_pair() -> None:
    memory = Memory()
    assert memory.merge({"magic_word": "xyzzy", "session_id": "abc"}) is memory
    assert memory.get("magic_word") == "xyzzy"
    assert memory.session_id == "abc"
    assert memory.keys() == ["magic_word"]


def test_delete_returns_the_value() -> None:
    memory = Memory()
    memory.set("k", 3)
    assert memory.delete("k") == 3
    assert not memory.has_key("k")
    assert memory.delete("k") is None


def test_clear_keeps_reserved_values() -> None:
    memory = Memory(data={"d": 1})
    memory.set("a", 1)
    memory.clear()
    assert memory.keys() == []
    assert memory.data.d == 1


def test_reset_keeps_the_cache_handle() -> None:
    memory = Memory(data={"d": 1}, session_id="s")
    cache = memory.cache
    memory.set("a", 1)
    memory.append_result("r")
    memory.reset()
    assert memory.keys() == []
    assert memory.data == {}
    assert memory.results == []
    assert memory.session_id is None
    assert memory.cache is cache


def test_clone_is_deep_and_has_no_subscriptions() -> None:
    memory = Memory(data={"nested": {"x": 1}}, network_name="net")
    memory.set("list", [1, 2])
    memory.subscribe("list", callback=lambda change: None)
    twin = memory.clone()
    twin.get("list").append(3)
    twin.data["nested"]["x"] = 2
    assert memory.get("list") == [1, 2]
    assert memory.data["nested"]["x"] == 1
    assert twin.network_name == "net"
    assert memory.subscribed("list")
    assert not twin.subscribed("list")


def test_round_trip_through_plain_data() -> None:
    memory = Memory(data={"a": 1}, session_id="s")
    memory.set("k", [1, "two"])
    memory.append_result({"robot_name": "bob"})
    plain = memory.to_dict()
    assert plain == {
        "data": {"a": 1},
        "results": [{"robot_name": "bob"}],
        "messages": [],
        "session_id": "s",
        "custom": {"k": [1, "two"]},
    }
    again = Memory.from_dict(plain)
    assert again.to_dict() == plain
    assert '"custom": {"k": [1, "two"]}' in memory.to_json()


def test_format_history_turns_results_into_messages() -> None:
    class Result:
        output = ["reply"]
        tool_calls = ["call"]

    memory = Memory(messages=["first"])
    memory.append_result(Result())
    assert memory.format_history() == ["first", "reply", "call"]


def test_create_memory_passes_options() -> None:
    memory = create_memory(data={"x": 1}, enable_cache=False, network_name="n")
    assert memory.data.x == 1
    assert memory.cache is None
    assert memory.network_name == "n"


def test_memory_satisfies_the_store_interface() -> None:
    assert isinstance(Memory(), MemoryStore)
    assert "Memory" in memory_mod.__all__


def test_writer_is_per_thread() -> None:
    memory = Memory()
    memory.current_writer = "main"
    seen = {}

    def other() -> None:
        seen["before"] = memory.current_writer
        with memory.writing_as("worker"):
            seen["inside"] = memory.current_writer
        seen["after"] = memory.current_writer

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == {"before": None, "inside": "worker", "after": None}
    assert memory.current_writer == "main"
