"""Finding a broker and keeping its welcome: HELLO with backoff over the broker URLs, its refusals,
and why no WELCOME came.

:class:`Dialer` is the part of a :class:`~robotlab.bus.member.link.Link` that talks to the
broker about the connection itself rather than about messages: it acts on WELCOME, on the ERRORs
a HELLO can get (and NOT_READY from a restarted broker), and on the count of frames a HEARTBEAT
confirms; it hands every other frame on. The Link opens the sockets and sends.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from time import monotonic
from typing import Any, Final

import zmq

from robotlab.errors import ConfigError, PeerUnavailable, StandbyPassive

from ..keys import KeyConfig
from ..wire.monitor import waiting_events
from ..wire.protocol import Body, Command, ErrorCode, Frame
from .handshake import CONNECTED, NO_DETAIL, diagnose
from .tracking import Flag
from .unconfirmed_replies import Kept

log = logging.getLogger("robotlab.bus")

BACKOFF_START: Final = 1.0
BACKOFF_MAX: Final = 30.0
# The causes a retry line names, besides a refused handshake (robotlab.bus.member.handshake).
# Whether the handshake finished is what the link already knows: the socket is IMMEDIATE, so
# HELLO is sent only once a connection is up, its handshake done (``_hello_sent``). Whether a
# connection was made at all comes from the socket's monitor: one event per connection, never
# one per message, read only when a retry line or an error is written.
NOT_CONNECTED: Final = "could not connect (nothing listening there, or no route to it)"
HANDSHAKE_UNANSWERED: Final = "connected, but no answer (a stopped broker, or not a ZeroMQ peer?)"
CONNECTED_UNANSWERED: Final = "connected, but no answer to HELLO (a stopped or overloaded broker?)"
REFUSAL_LOOK: Final = 0.1
"""How often a caller waiting for its WELCOME looks whether every broker refused its handshake."""


class Dialer:
    """The welcome state machine: welcomed, refused for good, or trying the next URL with
    backoff."""

    def __init__(self, url: str, hello: dict[str, Any], keys: KeyConfig | None) -> None:
        self.keys = keys
        self.hello = hello
        self.refused: str | None = None
        """Why the broker refused our HELLO (ERROR forbidden); we stop trying once set."""
        self.last_error: str | None = None
        """The last ERROR the broker answered a HELLO with (e.g. ``conflict``), for messages."""
        self.answered = threading.Event()
        """Set by a WELCOME or a refusal: either way, waiting longer changes nothing."""
        # a primary and its standby: each reconnect takes the next
        self.urls = [one.strip() for one in url.split(",")]
        self.url, self._at = self.urls[0], -1
        self.welcome: dict[str, Any] | None = None
        self.welcomed = Flag()
        self.heartbeat, self.liveness = 1.0, 3
        self._lock = threading.RLock()
        self._monitor: zmq.Socket | None = None
        self._handshake: Mapping[str, Any] | None = None
        # a handshake failure on the current socket
        self._failed_here: Mapping[str, Any] | None = None
        # the current socket has a connection (its handshake may not have finished)
        self._connected_here = False
        self._broke_off = 0  # handshakes of the current socket that failed with no detail
        # the URLs whose handshake failed in a way no retry mends: keys where none are wanted, or
        # none where they are, or a key the broker's ZAP refused
        self._refused_at: set[str] = set()
        self._attempt_at = 0.0
        self._hello_sent = False
        self._backoff = self._retry_in = BACKOFF_START
        # What the frames about the connection act on; the client sets on_frame to where its
        # other frames go (robotlab.bus.member.incoming_frames).
        self.kept = Kept()
        self.on_frame: Callable[[Frame], None] = lambda frame: None
        self._seq = 0  # frames sent on the current connection: what the broker's ``seen`` counts

    def _reconnect(self) -> None:
        raise NotImplementedError  # the Link opens sockets

    def _send_hello(self) -> bool:
        raise NotImplementedError  # the Link sends

    def _send(self, frames: list[Body]) -> bool:
        raise NotImplementedError  # the Link sends

    def _on_welcome(self, header: dict[str, Any]) -> None:
        raise NotImplementedError  # the Link resends what it keeps

    def wait_welcome(self, timeout: float, until_refused: bool = False) -> bool:
        """True once welcomed within ``timeout`` s; False if not yet, or with ``until_refused``
        as soon as every broker refused this client's handshake (waiting changes nothing, though
        the link keeps trying); ConfigError if the broker refused us."""
        deadline = monotonic() + timeout
        look = REFUSAL_LOOK if until_refused else timeout
        while not self.answered.wait(max(0.0, min(look, deadline - monotonic()))):
            if monotonic() >= deadline or until_refused and self.refused_everywhere():
                break
        if self.refused is not None:
            raise ConfigError(f"the broker at {self.url} refused {self.hello['name']!r} "
                              f"(forbidden): {self.refused}")
        return self.welcomed.is_set()

    @property
    def passive(self) -> bool:
        """True when the last broker that answered our HELLO said it is a passive standby."""
        return self.last_error is not None and self.last_error.startswith("passive:")

    def not_welcomed(self, timeout: float) -> PeerUnavailable:
        """The error for no WELCOME within ``timeout`` s: ``StandbyPassive`` (try again) when the
        last broker to answer was a passive standby, else ``PeerUnavailable``."""
        if self.passive:
            return StandbyPassive(f"{self.no_answer(timeout)}; give both brokers' addresses, or "
                                  "try again if it is taking over")
        return PeerUnavailable(self.no_answer(timeout))

    def refused_everywhere(self) -> bool:
        """True when the handshake failed at every broker URL in a way no retry mends."""
        self._read_monitor()
        return self._refused_at >= set(self.urls)

    def no_answer(self, timeout: float) -> str:
        """One line: no WELCOME within ``timeout`` s, and the likeliest reason."""
        if self._refused_at >= set(self.urls):
            return (f"the broker at {self.url} refused this client's handshake: "
                    f"{diagnose(self._handshake, self.keys is not None)}")
        if self.last_error is not None:
            return (f"the broker at {self.url} did not welcome {self.hello['name']!r} within "
                    f"{timeout:g}s: {self.last_error}")
        return f"no broker answered at {self.url} within {timeout:g}s: {self.why_not_welcomed()}"

    def why_not_welcomed(self) -> str:
        """The likeliest reason no WELCOME came, in one line (the handshake's fate when known)."""
        self._read_monitor()
        if self._handshake is None and (self._hello_sent or self._connected_here):
            return CONNECTED_UNANSWERED if self._hello_sent else HANDSHAKE_UNANSWERED
        return diagnose(self._handshake, self.keys is not None)

    def attempt_cause(self) -> str:
        """What the current connection attempt saw, as the cause a retry line names: a refused
        key (its handshake failed), no answer (connected, HELLO sent or the handshake never
        finished, no WELCOME), or no connection at all (nothing listening, no route)."""
        self._read_monitor()
        if self._failed_here is not None:
            return diagnose(self._failed_here, self.keys is not None)
        if self._hello_sent:
            return CONNECTED_UNANSWERED
        return HANDSHAKE_UNANSWERED if self._connected_here else NOT_CONNECTED

    def _read_monitor(self) -> None:
        with self._lock:
            if self._monitor is None:
                return
            for event in waiting_events(self._monitor):
                if event["event"] == CONNECTED:
                    self._connected_here = True
                elif event["event"] != NO_DETAIL:  # ZAP refused the key, or a mechanism mismatch
                    self._failed_here = self._handshake = event
                    self._refused_at.add(self.url)
                else:
                    # A handshake that broke off: once, the broker went away mid-way (an outage,
                    # not a key); again and again (ZeroMQ reconnects each time), a broker that
                    # cannot read our handshake: broker.key is not its key.
                    self._connected_here = False
                    self._broke_off += 1
                    if self._broke_off > 1:
                        self._failed_here = self._handshake = event

    def _next_url(self) -> str:
        self._close_monitor()
        self._failed_here, self._connected_here, self._broke_off = None, False, 0
        self._at = (self._at + 1) % len(self.urls)
        self.url = self.urls[self._at]
        self._attempt_at = monotonic()
        return self.url

    def _handle(self, frame: Frame) -> None:
        """Act on a frame about the connection (WELCOME, a HELLO's ERROR, HEARTBEAT); hand any
        other to ``on_frame``."""
        if frame.command == Command.WELCOME:
            self._on_welcome(frame.header)
        elif frame.command == Command.ERROR and frame.header.get("code") == ErrorCode.NOT_READY:
            self.welcomed.clear()  # the broker restarted and forgot us: introduce ourselves again
            self._attempt_at = monotonic()
            self._seq = 0  # the count starts again with this HELLO: what was kept counts as unsent
            self.kept.unsend()
            self._hello_sent = self._send_hello()
        elif frame.command == Command.ERROR and self._refusal(
                frame.header.get("code"), str(frame.header.get("detail", ""))):
            return
        elif frame.command != Command.HEARTBEAT:
            self.on_frame(frame)
        elif isinstance(frame.header.get("seen"), int):
            self.kept.confirm(frame.header["seen"])

    def _close_monitor(self) -> None:
        if self._monitor is not None:  # keep the last verdict across reconnects
            self._read_monitor()
            self._monitor.close(linger=0)
            self._monitor = None

    def _welcomed_by(self, header: dict[str, Any]) -> None:
        self.welcome = header
        self.last_error = None
        self.heartbeat = float(header["heartbeat"])
        self.liveness = int(header["liveness"])
        self._backoff = self._retry_in = BACKOFF_START
        self.welcomed.set()
        self.answered.set()

    def _refusal(self, code: Any, detail: str) -> bool:
        """Take an ERROR the broker answers a HELLO with; False for any other code."""
        if code == ErrorCode.PASSIVE:
            self.last_error = f"passive: {detail}"
            # The pair is up and one of them will serve: try the other soon and often, not with
            # the backoff grown while the dead one stayed silent (a takeover takes seconds).
            self._backoff = self._retry_in = BACKOFF_START
            self._attempt_at = monotonic() - self._retry_in + 0.1  # the next broker, shortly
        elif code == ErrorCode.CONFLICT:
            self.last_error = f"conflict: {detail}"
            log.warning("bus: the broker at %s refused our HELLO for now: %s", self.url,
                        self.last_error)
        elif code == ErrorCode.FORBIDDEN:
            self.refused = detail or "forbidden"
            self.welcomed.clear()
            self.answered.set()
            log.error("bus: the broker at %s refused us: %s", self.url, self.refused)
        else:
            return False
        return True

    def _retry_hello(self, now: float) -> None:
        if now - self._attempt_at >= self._retry_in:
            self._backoff = min(self._backoff * 2, BACKOFF_MAX)
            self._retry_in = self._backoff * random.uniform(0.75, 1.25)
            # One line per backoff step: a daemon waiting for its broker says so, every 30 s at
            # most, naming the cause the socket saw, so an outage is not mistaken for a key
            # problem.
            log.info("bus: no welcome from the broker at %s: %s; trying again in %.0fs", self.url,
                     self.attempt_cause(), self._retry_in)
            self._reconnect()
        elif not self._hello_sent:
            self._hello_sent = self._send_hello()  # the connection was not up yet
