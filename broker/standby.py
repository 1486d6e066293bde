"""A primary and a backup broker that watch each other: the zguide's Binary Star pattern.

Each broker publishes its state (PRIMARY, BACKUP, ACTIVE, PASSIVE) every heartbeat on a PUB
socket and subscribes to its peer's. The finite-state machine is the zguide's
(``examples/Python/bstarsrv.py``), with its rule against split brain: a passive broker takes
over only when its peer has been silent for two heartbeats *and* a client has come to it (a
HELLO). A network cut between the two brokers alone therefore never makes two active brokers:
the backup also needs the clients to have given up on the primary.

Two additions to the zguide's machine, both for a primary restarted while the backup is active,
which must hear that and go passive instead of serving a second half of the crew:

- it waits two heartbeats after its start before it serves anyone, and longer
  (``PEER_ANSWER_WAIT``) once the peer's state socket has answered, since then the peer's process
  is up: a start slowed by a loaded machine must not outrun the peer's first state;
- one that served alone anyway (the peer was unreachable or stopped) and then hears an active
  peer stops, as two active brokers do: both have served clients since, and going passive while
  still holding members and its own journal's work would leave it serving unseen.

Beside the states, the same two sockets carry the active broker's journal to the passive one
(:mod:`robotlab.broker.replica`): a message of more than one frame is the replica's. Neither
socket drops a message for a slow reader (no high-water mark); one lost to a reconnect shows as
a gap, and the passive broker asks for the whole journal again. docs/durability.md says what a
failover keeps and what it can lose.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import IntEnum

import zmq

from robotlab.bus.config import BrokerConfig
from robotlab.bus.wire.monitor import waiting_events, watch
from robotlab.errors import ConfigError, StandbyConflict

log = logging.getLogger("robotlab.broker")

PEER_SILENCE = 2
"""Heartbeats without a word from the peer after which it counts as gone."""
PEER_ANSWER_WAIT = 20
"""Heartbeats a starting primary waits for its peer's first state once the peer's state socket
has answered (a ZeroMQ handshake: the peer's process is up), before it serves alone."""


class State(IntEnum):
    """A broker's state, as it publishes it."""

    PRIMARY = 1
    BACKUP = 2
    ACTIVE = 3
    PASSIVE = 4


class Standby:
    """One side of a Binary Star pair: its state machine and its two state sockets."""

    def __init__(self, role: str, bind: str, peer: str, heartbeat: float, context: zmq.Context,
                 now: float,
                 secure: Callable[[zmq.Socket, zmq.Socket], None] | None = None) -> None:
        self.state = State.PRIMARY if role == "primary" else State.BACKUP
        self.heartbeat = heartbeat
        self.started = now
        self.peer_expiry = now + PEER_SILENCE * heartbeat
        """When the peer counts as gone; before the first word from it, a primary's grace."""
        self.heard = False
        self.alone = False
        """Set when a primary starts to serve without having heard its peer."""
        self._next_publish = now
        self.pub = context.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        # a replica's change dropped would cost the peer a whole copy
        self.pub.setsockopt(zmq.SNDHWM, 0)
        self.sub = context.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.RCVHWM, 0)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.on_stream: Callable[[list[bytes], float], None] = lambda frames, now: None
        """Called with each message of more than one frame from the peer (the replica's)."""
        if secure is not None:  # a keyed broker's pair: CURVE on both, its key only (security.py)
            secure(self.pub, self.sub)
        # whether the peer is up, until its first state: only a primary may serve alone
        self._peer_answers = (watch(self.sub, zmq.EVENT_HANDSHAKE_SUCCEEDED)
                              if role == "primary" and not peer.startswith("inproc://") else None)
        try:
            self.pub.bind(bind)
            self.sub.connect(peer)
        except zmq.ZMQError as exc:
            self.close()
            raise ConfigError(f"standby: cannot bind {bind} or reach {peer}: {exc}") from exc

    # -- events ------------------------------------------------------------------------------------

    @classmethod
    def of(cls, config: BrokerConfig, context: zmq.Context,
           secure: Callable[[zmq.Socket, zmq.Socket], None] | None = None) -> Standby | None:
        """The standby side ``config`` asks for, or None for a broker on its own; ``secure``
        puts its sockets under CURVE (a keyed broker's)."""
        if not (config.standby and config.state_bind and config.peer):
            return None
        return cls(config.standby, config.state_bind, config.peer, config.heartbeat, context,
                   time.monotonic(), secure)

    def serving(self, now: float) -> bool:
        """True while this broker serves clients: active, or a primary alone after its grace."""
        if self.state == State.ACTIVE:
            return True
        if self.state != State.PRIMARY:
            return False
        if self.heard or self.alone:
            return True
        if self._peer_answers is not None:  # the loop may not have read the peer's answer yet
            self._read_answers(now)
        if now < self.peer_expiry:
            return False
        # Set here, as it starts to serve: from now on an active peer means two served (_on_peer).
        log.warning("standby: no word from the peer within %gs of starting: serving alone",
                    self.peer_expiry - self.started)
        self.alone = True
        self._stop_watching()
        return True

    def peer_live(self, now: float) -> bool:
        """True while the peer has spoken within the last two heartbeats."""
        return self.heard and now < self.peer_expiry

    @property
    def fd(self) -> int:
        """The peer socket's notification fd, for the broker's poll (see ``router.Readiness``)."""
        return int(self.sub.getsockopt(zmq.FD))

    def accepts(self, now: float) -> bool:
        """A client says HELLO: may this broker serve it? (It may become active on the way.)"""
        if self.serving(now):
            return True
        if self.state == State.PASSIVE and now >= self.peer_expiry:
            log.warning("standby: the peer is silent and clients came here: taking over as the "
                        "active broker")
            self.state = State.ACTIVE
            return True
        return False

    def receive(self, now: float) -> None:
        """Read the peer's published states and move the machine.

        Raises:
            ConfigError: both brokers are active, or both passive (the zguide aborts too).
            StandbyConflict: this primary served alone and its peer is active.
        """
        if self._peer_answers is not None:
            self._read_answers(now)
        while self.sub.poll(0):
            frames = self.sub.recv_multipart()
            self.peer_expiry = now + PEER_SILENCE * self.heartbeat
            # heard counts states only: a restarted primary must read its peer's first
            if len(frames) > 1:
                self.on_stream(frames, now)
                continue
            data = frames[0]
            try:
                peer = State(int(data))
            except ValueError:
                log.warning("standby: ignored an unknown peer state %r", data[:8])
                continue
            self._on_peer(peer)
            self.heard = True
            self._stop_watching()

    def _read_answers(self, now: float) -> None:
        """A primary not yet serving whose peer's socket answered waits longer for its state."""
        assert self._peer_answers is not None
        if waiting_events(self._peer_answers) and not (self.heard or self.alone):
            self.peer_expiry = max(self.peer_expiry, now + PEER_ANSWER_WAIT * self.heartbeat)

    def _stop_watching(self) -> None:
        if self._peer_answers is not None:
            self.sub.disable_monitor()
            self._peer_answers.close(linger=0)
            self._peer_answers = None

    def _on_peer(self, peer: State) -> None:
        me = self.state
        if me == State.ACTIVE and peer == State.ACTIVE:
            raise ConfigError("standby: both brokers are active (split brain); stopping this one. "
                              "Check that one runs --standby primary and the other --standby "
                              "backup")
        if me == State.PRIMARY and self.alone and peer == State.ACTIVE:
            raise StandbyConflict(
                "standby: this primary heard nothing from its peer when it started and served "
                "alone, but the peer is active: "
                "stopping this one so that one broker serves the crew. Start it again to join as "
                "passive; if the peer was only slow to answer, raise --heartbeat")
        if me == State.PASSIVE and peer == State.PASSIVE:
            raise ConfigError("standby: both brokers are passive; check the --standby roles and "
                              "--peer addresses")
        if (me == State.PRIMARY and peer == State.BACKUP
                or me == State.PASSIVE and peer in (State.PRIMARY, State.BACKUP)):
            self._become(State.ACTIVE, f"the peer is {peer.name.lower()}")
        elif me in (State.PRIMARY, State.BACKUP) and peer == State.ACTIVE:
            self._become(State.PASSIVE, "the peer is active")

    def _become(self, state: State, why: str) -> None:
        log.info("standby: %s -> %s (%s)", self.state.name.lower(), state.name.lower(), why)
        self.state = state

    # -- the loop's timer --------------------------------------------------------------------------

    def step(self, now: float) -> None:
        """Read what the peer published, and publish this broker's state once a heartbeat.

        Raises:
            ConfigError: both brokers are active, or both passive.
            StandbyConflict: this primary served alone and its peer is active.
        """
        self.receive(now)
        if now >= self._next_publish:
            self._next_publish = now + self.heartbeat
            try:
                self.pub.send(b"%d" % self.state, zmq.NOBLOCK)
            except zmq.Again:
                pass  # nobody subscribed yet

    def send(self, frames: list[bytes]) -> None:
        """Send a message of the replica's to the peer (dropped when nobody is connected)."""
        try:
            self.pub.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            pass  # nobody subscribed yet: the peer asks for what it missed

    def next_deadline(self) -> float:
        """When the next state is due, for the loop's poll timeout."""
        return self._next_publish

    def close(self) -> None:
        """Close both sockets (and the peer's watch, if still kept)."""
        self._stop_watching()
        self.pub.close(linger=0)
        self.sub.close(linger=0)
