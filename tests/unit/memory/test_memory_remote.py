"""RemoteMemory against a MemoryService, over an embedded broker (no process started)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from robotlab import bus
from robotlab.errors import AwaitTimeout, BusError, PeerUnavailable, RemoteError
from robotlab.memory.memory import Memory, MemoryChange, MemoryStore
from robotlab.memory.remote import RemoteMemory
from robotlab.memory.service import MemoryService
from tests.waiting import wait_until


@dataclass
class Shared:
    memory: Memory
    service: MemoryService
    remote: RemoteMemory


@pytest.fixture
def shared() -> Iterator[Shared]:
    owner = bus.connect(None, name="owner")
    memory = Memory(network_name="net")
    service = MemoryService.start(memory, owner.url, "memory/net")
    remote = RemoteMemory.connect(owner.url, "memory/net", network_name="net", timeout=2)
    yield Shared(memory, service, remote)
    remote.close()
    service.close()
    owner.close()


def test_reads_and_writes_reach_the_one_memory(shared: Shared) -> None:
    remote, memory = shared.remote, shared.memory
    assert remote.set("k", {"n": [1, 2]}) == {"n": [1, 2]}
    assert memory.get("k") == {"n": [1, 2]}
    memory.set("x", 1)
    assert remote.get("x") == 1
    assert remote["missing"] is None
    assert remote.get("x", "k", "y") == {"x": 1, "k": {"n": [1, 2]}}
    assert remote.has_key("x") and "data" in remote
    assert sorted(remote.keys()) == ["k", "x"]
    assert remote.delete("x") == 1
    assert memory.keys() == ["k"]
    remote.merge({"a": 1, "b": 2})
    assert memory.get("a", "b") == {"a": 1, "b": 2}
    remote.clear()
    assert memory.keys() == []


def test_remote_writes_carry_the_remote_writer(shared: Shared) -> None:
    changes: list[MemoryChange] = []
    shared.memory.subscribe("k", callback=changes.append)
    with shared.remote.writing_as("far-robot"):
        shared.remote.set("k", 1)
    shared.remote.set("k", 2, writer="explicit")
    shared.memory.flush(2)
    assert [(c.value, c.previous, c.writer)
            for c in changes] == [(1, None, "far-robot"), (2, 1, "explicit")]


def test_remote_subscribers_see_changes_in_order_with_writer(shared: Shared) -> None:
    seen: list[MemoryChange] = []
    sub = shared.remote.subscribe_pattern("score:*", seen.append)
    shared.memory.current_writer = "judge"
    for i in range(50):
        shared.memory.set("score:a", i)
    shared.memory.set("other", 1)
    assert shared.remote.flush(3)
    assert [c.value for c in seen] == list(range(50))
    assert [c.previous for c in seen[1:]] == list(range(49))
    assert {(c.key, c.writer, c.network_name) for c in seen} == {("score:a", "judge", "net")}
    assert shared.remote.subscribed("score:x")
    assert shared.remote.unsubscribe(sub) is True
    assert not shared.remote.subscribed("score:x")


def test_key_subscription_and_unsubscribe_keys(shared: Shared) -> None:
    seen: list[str] = []
    shared.remote.subscribe("a", "b", callback=lambda change: seen.append(change.key))
    shared.memory.set("a", 1)
    shared.remote.unsubscribe_keys("a")
    shared.memory.set("a", 2)
    shared.memory.set("b", 3)
    shared.remote.flush(3)
    assert seen == ["a", "b"]


def test_a_remote_wait_returns_when_the_key_is_set(shared: Shared) -> None:
    threading.Timer(0.1, shared.memory.set, args=("ready", "go")).start()
    assert shared.remote.get("ready", wait=3) == "go"
    assert shared.remote.get("ready", wait=True) == "go"
    assert not shared.memory.subscribed("ready")  # the wait's own subscription is gone


def test_a_remote_wait_times_out_with_the_local_message(shared: Shared) -> None:
    with pytest.raises(AwaitTimeout, match=r"^Timeout waiting for :never after 0.2 seconds$"):
        shared.remote.get("never", wait=0.2)


def test_errors_cross_as_the_same_kind(shared: Shared) -> None:
    with pytest.raises(ValueError, match="Cannot delete reserved key: data"):
        shared.remote.delete("data")
    with pytest.raises(ValueError, match="cache"):
        shared.remote["cache"] = 1
    with pytest.raises(ValueError, match="unknown memory op 'explode'"):
        shared.remote._call("explode")
    with pytest.raises(RemoteError, match="AttributeError") as caught:
        shared.remote._call("merge", values=5)
    assert caught.value.type_name == "AttributeError"


def test_reserved_keys_read_remotely(shared: Shared) -> None:
    shared.memory.data["topic"] = "ships"
    shared.memory.append_result({"robot_name": "a"})
    shared.remote.append_result({"robot_name": "b"})
    assert shared.remote.data.topic == "ships"
    assert [r["robot_name"] for r in shared.remote.results] == ["a", "b"]
    assert shared.remote.results_from(1) == [{"robot_name": "b"}]
    assert shared.remote.cache is not None and shared.remote["cache"] is shared.remote.cache
    assert shared.remote.to_dict()["data"] == {"topic": "ships"}
    assert isinstance(shared.remote, MemoryStore)


def test_losing_the_service_is_an_error_not_a_hang(shared: Shared) -> None:
    shared.service.close()
    with pytest.raises(BusError):
        shared.remote.get("k")
    with pytest.raises(BusError):
        shared.remote.get("k", wait=True)


def test_a_wait_in_progress_fails_when_the_service_goes(shared: Shared) -> None:
    threading.Timer(0.2, shared.service.close).start()
    with pytest.raises(BusError):
        shared.remote.get("k", wait=True)


def test_the_connection_opens_on_first_use_and_closes_for_good(shared: Shared) -> None:
    lazy = RemoteMemory.connect(shared.remote.client.url, "memory/net")
    assert lazy._connection._client is None  # a member that never touches memory pays nothing
    shared.memory.set("k", "v")
    assert lazy.get("k") == "v"
    lazy.close()
    with pytest.raises(PeerUnavailable, match="closed"):
        lazy.get("k")


def test_a_subscriber_that_left_the_bus_is_dropped(shared: Shared) -> None:
    leaving = RemoteMemory.connect(shared.remote.client.url, "memory/net")
    leaving.subscribe("k", callback=lambda change: None)
    assert shared.memory.subscribed("k")
    leaving.close()

    def dropped() -> bool:
        shared.memory.set("k", 1)
        shared.memory.flush(1)
        return not shared.memory.subscribed("k")

    wait_until(dropped, timeout=5, message="the departed subscriber is dropped")


def test_documents_are_stored_and_searched_in_the_served_memory(shared: Shared) -> None:
    remote, memory = shared.remote, shared.memory
    remote.store_document("otters", "Sea otters hold hands while they sleep in kelp beds.")
    memory.store_document("volcanoes", "Basalt lava flows from shield volcanoes in Hawaii.")
    assert sorted(remote.document_keys()) == ["otters", "volcanoes"] == sorted(
        memory.document_keys())
    best = remote.search_documents("sleeping otters", limit=1)
    assert [hit["key"] for hit in best] == ["otters"]
    assert best[0]["text"].startswith("Sea otters") and best[0]["score"] > 0
    assert remote.delete_document("otters") is True
    assert remote.delete_document("otters") is False
    assert memory.document_keys() == ["volcanoes"]


class _FailingEmbedder:
    def embed(self, texts: list[str], kind: str) -> list[dict[str, float]]:
        from robotlab.errors import InferenceError

        raise InferenceError("the embedding service answered 503")


def test_a_document_error_in_the_service_is_raised_remotely_as_the_same_kind(
        shared: Shared) -> None:
    from robotlab.errors import InferenceError

    shared.memory.embedder = _FailingEmbedder()
    with pytest.raises(InferenceError, match="503"):
        shared.remote.store_document("k", "text")
    assert shared.memory.document_keys() == []
