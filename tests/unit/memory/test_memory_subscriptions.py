"""Memory subscriptions, patterns and MemoryChange (spec section 22)."""

from __future__ import annotations

import threading
from datetime import datetime

import pytest

from robotlab.memory.change import compile_pattern
from robotlab.memory.memory import Memory, MemoryChange
from tests.waiting import wait_until


def test_pattern_subscriber_sees_matching_keys_only_with_previous_and_writer() -> None:
    # Acceptance check 2.
    memory = Memory(network_name="net")
    seen: list[MemoryChange] = []
    memory.subscribe_pattern("a:*", seen.append)
    memory.current_writer = "alice"
    memory.set("a:1", "first")
    memory.set("b:1", "other")
    memory.current_writer = "bob"
    memory.set("a:1", "second")
    assert memory.flush(2)
    assert [(c.key, c.value, c.previous, c.writer) for c in seen] == [
        ("a:1", "first", None, "alice"),
        ("a:1", "second", "first", "bob"),
    ]
    assert all(c.network_name == "net" for c in seen)
    assert seen[0].is_created() and seen[1].is_updated()


def test_key_subscription_on_several_keys() -> None:
    memory = Memory()
    seen: list[str] = []
    memory.subscribe("x", "y", callback=lambda change: seen.append(change.key))
    for key in ("x", "z", "y"):
        memory.set(key, 1)
    memory.flush(2)
    assert seen == ["x", "y"]


def test_subscription_needs_a_callback() -> None:
    memory = Memory()
    with pytest.raises(TypeError):
        memory.subscribe("x")
    with pytest.raises(TypeError):
        memory.subscribe_pattern("x*")


def test_changes_arrive_in_write_order() -> None:
    memory = Memory()
    seen: list[int] = []
    memory.subscribe("n", callback=lambda change: seen.append(change.value))
    for i in range(200):
        memory.set("n", i)
    memory.flush(5)
    assert seen == list(range(200))


def test_notification_is_asynchronous() -> None:
    # The writer must not run subscriber code: a subscriber blocked on an event does not
    # block set().
    memory = Memory()
    release = threading.Event()
    seen: list[str] = []

    def slow(change: MemoryChange) -> None:
        release.wait(5)
        seen.append(change.value)

    memory.subscribe("k", callback=slow)
    memory.set("k", "v1")
    memory.set("k", "v2")
    assert seen == []
    release.set()
    wait_until(lambda: seen == ["v1", "v2"], timeout=2, message="both changes delivered")


def test_a_failing_subscriber_does_not_stop_the_others() -> None:
    memory = Memory()
    seen: list[str] = []

    def broken(change: MemoryChange) -> None:
        raise RuntimeError("subscriber bug")

    memory.subscribe("k", callback=broken)
    memory.subscribe("k", callback=lambda change: seen.append(change.value))
    assert memory.set("k", "v") == "v"
    memory.flush(2)
    assert seen == ["v"]


def test_unsubscribe_by_id() -> None:
    memory = Memory()
    seen: list[str] = []
    sub_id = memory.subscribe("k", callback=lambda change: seen.append(change.value))
    assert memory.unsubscribe(sub_id) is True
    assert memory.unsubscribe(sub_id) is False
    memory.set("k", "v")
    memory.flush(1)
    assert seen == []
    assert not memory.subscribed("k")


def test_unsubscribe_keys_keeps_other_keys_and_patterns() -> None:
    memory = Memory()
    memory.subscribe("a", "b", callback=lambda change: None)
    memory.subscribe_pattern("a*", lambda change: None)
    memory.unsubscribe_keys("a")
    assert memory.subscribed("b")
    assert memory.subscribed("a")  # still covered by the pattern
    memory.unsubscribe_keys("b")
    assert not memory.subscribed("b")


def test_delete_notifies_a_deleted_change() -> None:
    memory = Memory()
    seen: list[MemoryChange] = []
    memory.subscribe("k", callback=seen.append)
    memory.set("k", 1)
    memory.delete("k")
    memory.flush(1)
    assert seen[-1].is_deleted()
    assert seen[-1].previous == 1


def test_callback_may_write_to_the_same_memory() -> None:
    memory = Memory()

    def echo(change: MemoryChange) -> None:
        memory.set("echo", change.value)

    memory.subscribe("k", callback=echo)
    memory.set("k", "hello")
    assert memory.get("echo", wait=2) == "hello"


def test_memory_without_subscribers_starts_no_thread() -> None:
    before = {t.name for t in threading.enumerate()}
    memory = Memory(network_name="quiet")
    memory.set("k", 1)
    after = {t.name for t in threading.enumerate()}
    assert "memory-quiet-drainer" not in after - before


def test_pattern_is_an_anchored_glob() -> None:
    pattern = compile_pattern("analysis:?x*")
    assert pattern.fullmatch("analysis:1x")
    assert pattern.fullmatch("analysis:1xyz")
    assert not pattern.fullmatch("x:analysis:1x")
    assert not pattern.fullmatch("analysis:x")
    assert compile_pattern("a[1]").fullmatch("a[1]")
    assert not compile_pattern("a.b").fullmatch("axb")


def test_change_predicates() -> None:
    assert MemoryChange("k", 1).is_created()
    assert MemoryChange("k", 2, previous=1).is_updated()
    assert MemoryChange("k", None, previous=1).is_deleted()
    nothing = MemoryChange("k", None)
    assert not (nothing.is_created() or nothing.is_updated() or nothing.is_deleted())


def test_change_round_trips_through_plain_data() -> None:
    change = MemoryChange("k", [1], previous="p", writer="w", network_name="n", correlation_id="c")
    plain = change.to_dict()
    assert isinstance(plain["timestamp"], str)
    assert MemoryChange.from_dict(plain) == change
    bare = MemoryChange("k", 1).to_dict()
    assert set(bare) == {"key", "value", "timestamp"}
    assert isinstance(MemoryChange.from_dict({"key": "k"}).timestamp, datetime)
