"""The Binary Star state machine of a standby pair, on a clock the test controls."""

from __future__ import annotations

import uuid

import pytest
import zmq

from robotlab.broker.standby import Standby, State
from robotlab.errors import ConfigError, StandbyConflict
from tests.waiting import wait_until

HEARTBEAT = 1.0


@pytest.fixture
def pair():
    made: list[Standby] = []

    def make(role: str, now: float = 0.0) -> Standby:
        name = uuid.uuid4().hex[:8]
        side = Standby(role, f"inproc://{name}-me", f"inproc://{name}-peer", HEARTBEAT,
                       zmq.Context.instance(), now)
        made.append(side)
        return side

    yield make
    for side in made:
        side.close()


def test_the_backup_turns_clients_away_while_the_primary_is_live_and_takes_over_when_it_is_not(
        pair) -> None:
    backup = pair("backup")
    assert not backup.accepts(now=0.1)  # never seen the primary: a backup alone serves no one
    backup._on_peer(State.ACTIVE)
    backup.peer_expiry = 10.0 + 2 * HEARTBEAT  # the primary last spoke at t=10
    assert backup.state == State.PASSIVE
    assert not backup.accepts(now=11.0)  # the primary is live: clients belong there
    assert backup.accepts(now=12.5)  # silent for two heartbeats, and a client came: take over
    assert backup.state == State.ACTIVE


def test_a_primary_waits_out_its_grace_before_serving_alone_and_goes_passive_under_an_active_peer(
        pair) -> None:
    lone = pair("primary", now=0.0)
    assert not lone.accepts(now=1.0)  # it may yet hear an active backup
    assert lone.accepts(now=2.0)
    restarted = pair("primary", now=0.0)
    restarted._on_peer(State.ACTIVE)  # the backup took over while it was down
    assert restarted.state == State.PASSIVE and not restarted.accepts(now=0.5)


@pytest.mark.parametrize("both", [State.ACTIVE, State.PASSIVE])
def test_two_active_or_two_passive_brokers_stop_with_a_configuration_error(pair,
                                                                           both: State) -> None:
    side = pair("primary")
    side.state = both
    with pytest.raises(ConfigError, match="both brokers are"):
        side._on_peer(both)


def test_a_restarted_primary_whose_peer_answered_waits_for_its_state_past_the_grace(
        tmp_path) -> None:
    # A slow start (a loaded machine) reaches its first loop turn after the two heartbeats of
    # grace; the backup's process is up, only its first state has not come yet.
    context = zmq.Context.instance()
    backup = Standby("backup", f"ipc://{tmp_path}/backup", f"ipc://{tmp_path}/primary",
                     HEARTBEAT, context, 0.0)
    primary = Standby("primary", f"ipc://{tmp_path}/primary", f"ipc://{tmp_path}/backup",
                      HEARTBEAT, context, 0.0)
    try:
        backup._become(State.ACTIVE, "it took over while the primary was down")
        wait_until(lambda: primary.peer_expiry > 2 * HEARTBEAT or primary.receive(0.1),
                   timeout=10, message="the primary reading its peer's handshake")
        assert not primary.accepts(now=2.5), "a primary served beside a peer that is up"
        assert not primary.alone

        def heard() -> bool:
            backup.step(now=3.0)  # the backup publishes its state, once a heartbeat
            backup._next_publish = 0.0
            primary.receive(now=3.0)
            return primary.heard

        wait_until(heard, timeout=10, message="the primary hearing the active backup")
        assert primary.state == State.PASSIVE and not primary.accepts(now=3.0)
    finally:
        primary.close()
        backup.close()


def test_a_primary_that_served_alone_stops_when_it_hears_an_active_peer(pair) -> None:
    lone = pair("primary", now=0.0)
    assert lone.accepts(now=2.0) and lone.alone  # nothing answered: the peer is down
    with pytest.raises(StandbyConflict, match="served alone, but the peer is active"):
        lone._on_peer(State.ACTIVE)  # the backup was active all along, unreachable
    joined = pair("primary", now=0.0)
    assert joined.accepts(now=2.0)
    joined._on_peer(State.BACKUP)  # the peer came up after: the zguide's primary and backup
    assert joined.state == State.ACTIVE
