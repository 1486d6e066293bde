"""The broker's ``traffic`` admin op: the latest messages routed, who to whom, type and size,
never contents; asked after the last one seen, and told how many it did not get."""

from __future__ import annotations

import pytest

from robotlab.broker.traffic import Traffic
from robotlab.errors import BusError


def test_each_send_is_listed_without_its_content(member) -> None:
    alice, bob = member("alice"), member("bob")
    bob.on_message(lambda message: "pong" if message.type == "request" else None)
    assert alice.request("bob", "a secret ping", timeout=5).content == "pong"
    alice.send("bob", {"n": 1}, type="note").wait(5)

    seen = alice.admin("traffic")
    rows = [(m["from"], m["to"], m["type"], m["reply"]) for m in seen["messages"]]
    assert rows == [("alice", "bob", "request", False), ("bob", "alice", "reply", True),
                    ("alice", "bob", "note", False)]
    assert seen["last"] == 3 and seen["skipped"] == 0
    assert all(m["bytes"] > 0 for m in seen["messages"])
    assert "secret" not in repr(seen)
    newer = alice.admin("traffic", after=seen["last"])
    assert (newer["messages"], newer["skipped"]) == ([], 0)
    with pytest.raises(BusError, match="traffic: bad arguments"):
        alice.admin("traffic", limit="all")


def test_a_watcher_gets_the_newest_and_is_told_how_many_it_missed() -> None:
    traffic = Traffic(kept=3)
    for n in range(5):
        traffic.seen({"from": "a", "to": "b", "type": "message", "id": str(n)}, 10)

    answer = traffic.after(0, 2)
    assert [m["seq"] for m in answer["messages"]] == [4, 5]
    assert (answer["last"], answer["skipped"]) == (5, 3)
    assert [m["seq"] for m in traffic.after(1, 10)["messages"]] == [3, 4, 5]  # the ring kept 3
    assert traffic.after(1, 10)["skipped"] == 1
    assert traffic.after(5, 10) == {"messages": [], "last": 5, "skipped": 0}
    assert traffic.after(0, 0) == {"messages": [], "last": 5, "skipped": 5}
