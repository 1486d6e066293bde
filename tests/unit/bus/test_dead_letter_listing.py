"""Listing the dead-letter queue when it is long or its letters are large: admin answers too
large for a header travel as the REPLY's body, and ``dead_letters`` pages through any length.
Through the real broker code (embedded, over inproc://)."""

from __future__ import annotations

import pytest

from robotlab import bus
from robotlab.broker.dlq import LISTED_BODY_BYTES
from robotlab.bus.member.admin_calls import DEAD_LETTERS_PAGE, dead_letters
from robotlab.bus.wire.protocol import MAX_HEADER_BYTES, Command, pack
from robotlab.errors import BusError, Undeliverable
from tests.hostile import Raw
from tests.waiting import wait_until


def _dead_letter(sender: bus.BusClient, count: int, content: str = "hello there") -> list[str]:
    """Send ``count`` messages to a name nobody has: each is dead-lettered at once. Their ids."""
    sent = [sender.send("nobody", content, busy_retry=0) for _ in range(count)]
    for tracker in sent:
        with pytest.raises(Undeliverable):
            tracker.wait(5)
    return [tracker.id for tracker in sent]


def test_a_queue_longer_than_a_header_holds_is_listed_whole(member) -> None:
    alice = member("alice")
    # Given more dead letters than one header's worth (a listing of them once never arrived)
    ids = _dead_letter(alice, DEAD_LETTERS_PAGE + 300)
    listed = alice.admin("dlq.list")
    assert len(pack(listed)) > MAX_HEADER_BYTES
    # Then one request lists them all, and so does the paging helper, oldest first
    assert [row["id"] for row in listed] == ids
    assert [row["id"] for row in dead_letters(alice)] == ids


def test_a_page_starts_after_the_letter_named_even_one_gone(member) -> None:
    alice = member("alice")
    _dead_letter(alice, 6)
    first = [row["dlq_id"] for row in alice.admin("dlq.list", limit=2)]
    assert alice.admin("dlq.purge", dlq_id=first[1]) == {"purged": 1}
    # the page after a letter purged meanwhile still starts where it left off
    assert [row["dlq_id"] for row in alice.admin("dlq.list", after=first[1], limit=2)] == [
        f"dl-{number}" for number in (3, 4)]
    with pytest.raises(BusError, match="bad arguments.*not a dead letter's id"):
        alice.admin("dlq.list", after="nonsense")


def test_the_newest_letters_are_listed_from_the_newest_end(member) -> None:
    alice = member("alice")
    ids = _dead_letter(alice, 12)
    assert [row["id"] for row in alice.admin("dlq.list", newest=5)] == ids[-5:]
    assert alice.admin("dlq.list", newest=0) == []


def test_a_large_letter_is_listed_by_its_size_and_replayed_whole(member) -> None:
    alice = member("alice")
    big = "x" * (2 * LISTED_BODY_BYTES)
    _dead_letter(alice, 1, big)
    # Its listing leaves the body out and gives its size
    [row] = alice.admin("dlq.list")
    assert row["body"] is None and row["body_bytes"] > LISTED_BODY_BYTES
    # and a replay, once the name has a member, delivers the whole of it
    seen: list[str] = []
    member("nobody").on_message(lambda message: seen.append(message.content))
    alice.replay(row["dlq_id"]).wait(5)
    assert seen == [big]


def test_an_answer_no_message_could_carry_is_refused_naming_the_fix(make_broker) -> None:
    broker = make_broker(max_message_bytes=MAX_HEADER_BYTES + 20_000)
    with bus.connect(broker.url, name="alice") as alice:
        _dead_letter(alice, 300)
        with pytest.raises(BusError, match="dlq.list: the answer is .* bytes, more than a message "
                                           "may carry; ask for less"):
            alice.admin("dlq.list")
        assert len(alice.admin("dlq.list", limit=50)) == 50


def test_dead_letters_with_headers_a_sender_filled_count_their_headers(make_broker) -> None:
    # Given a broker whose dead letters may hold 1 MB, and a hostile local process that sends
    # to a name nobody has, each header filled with a field of its own (they travel on, up to
    # the protocol's 64 KiB) and each body empty
    broker = make_broker(dlq_max_bytes=1_000_000)
    raw = Raw(broker.url, broker.context)
    try:
        assert raw.hello("mallory", "mallory-1").command == Command.WELCOME
        for n in range(100):
            raw.send(Command.SEND, {"id": f"m{n}", "to": "nobody", "padding": "x" * 60_000})
        dlq = broker._broker.dlq
        wait_until(lambda: len(dlq) + dlq.evicted == 100, message="all 100 dead-lettered")
        # Then what the letters hold stays within the bound: counted by their bodies alone
        # (empty) they would all have stayed, 6 MB of headers
        held = sum(len(pack(letter.header)) for letter in dlq.list())
        assert held <= 1_000_000 and dlq.bytes <= 1_000_000
        assert 10 <= len(dlq) < 100 and dlq.evicted == 100 - len(dlq)
    finally:
        raw.close()
