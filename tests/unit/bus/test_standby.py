"""The Binary Star state machine of a standby pair, on a clock the test controls."""

from __future__ import annotations

import uuid

import pytest
import zmq

from robotlab.broker.standby import Standby, State
from robotlab.errors import ConfigError

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
