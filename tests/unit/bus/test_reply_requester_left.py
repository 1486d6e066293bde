"""A reply whose requester's connection goes under the send is held, not dead-lettered: the
requester's BYE, queued behind other members' frames, is often read later in the same turn.
Seen after a failover: a member's kept replies, sent again, reached a client that had every
answer and had just left, and became dead letters."""

from __future__ import annotations

from pathlib import Path

from robotlab.broker.absences import Absences
from robotlab.broker.deliveries import Deliveries
from robotlab.broker.dlq import DeadLetterQueue
from robotlab.broker.holds import Holds
from robotlab.broker.journal import Journal
from robotlab.broker.registry import Peer, Registry
from robotlab.broker.releases import release
from robotlab.bus.wire.protocol import Command

REPLY = {"id": "r1", "to": "alice", "to_instance": "alice-1", "untracked": True, "reply_to": "m1",
         "from": "bob", "from_instance": "bob-1"}


def peer(name: str, instance: str) -> Peer:
    return Peer(identity=instance.encode(), name=name, instance=instance, role="client",
                max_inflight=8, expires=1e9, joined=0.0)


class Table:
    """A broker's delivery table whose socket seam fails for members whose connection closed."""

    def __init__(self, journal: Journal) -> None:
        self.sent: list[tuple[str, Command, bytes]] = []
        self.closed: set[str] = set()
        self.registry, holds = Registry(), Holds(30.0)
        self.alice, self.bob = peer("alice", "alice-1"), peer("bob", "bob-1")
        for member in (self.alice, self.bob):
            self.registry.add(member)
            holds.know(member.name)
        self.dlq = DeadLetterQueue(100)
        self.deliveries = Deliveries(self.registry, self.dlq, self.send, 30.0, journal=journal,
                                     holds=holds)
        self.absences = Absences(holds, self.deliveries, journal)

    def send(self, to: Peer, command: Command, header: dict, body: bytes) -> bool:
        if to.instance in self.closed:
            return False
        self.sent.append((to.instance, command, body))
        return True

    def reply_as_alice_closes(self) -> None:
        self.closed.add("alice-1")  # her socket is gone; her BYE is not read yet
        self.deliveries.route(dict(REPLY), b"42", notify="bob-1")


def unsettled(journal: Journal) -> int:
    assert journal.commit(everything=True)
    return int(journal._db.execute("SELECT COUNT(*) FROM messages").fetchone()[0])


def test_a_reply_to_a_requester_that_left_under_the_send_is_dropped_not_dead_lettered(
        tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        table = Table(journal)
        # When bob's reply fails to reach alice, whose connection just closed
        table.reply_as_alice_closes()
        # Then it is held for her (journaled), not dead-lettered
        assert len(table.dlq) == 0 and unsettled(journal) == 1
        # And when her BYE is read, it is dropped and counted, and the journal lets it go
        table.registry.remove(table.alice)
        table.absences.left(table.alice, "said BYE", gone=True)
        assert len(table.dlq) == 0 and table.deliveries.counters["replies_dropped"] == 1
        assert unsettled(journal) == 0
        # And a held message for her name that is not her reply would have stayed: none here
        assert table.sent == []
    finally:
        journal.close()


def test_a_requester_whose_connection_dropped_gets_the_reply_when_it_is_back(
        tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "broker.db"), 1 << 20)
    try:
        table = Table(journal)
        table.reply_as_alice_closes()
        # When alice comes back on a new connection (no BYE: the link dropped)
        table.closed.clear()
        release(table.deliveries, "alice", 0.0)
        # Then she gets the reply once, and the journal lets it go
        assert table.sent == [("alice-1", Command.DELIVER, b"42")]
        assert len(table.dlq) == 0 and unsettled(journal) == 0
    finally:
        journal.close()
