"""The broker: a plain poll loop that routes the bus by robot name.

Read :mod:`robotlab.bus.wire.protocol` first for the frames. The loop polls with a timeout no longer
than the next timer, drains what is readable, dispatches each message through a literal command
table, then purges silent peers, times out unacked deliveries and sends due heartbeats, and
ends the turn by committing the journal and only then sending the receipts and admin replies
of the turn. Peer input never escapes the one ``except Exception`` around a single dispatch.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections import Counter
from collections.abc import Callable
from time import monotonic
from typing import Any

import zmq

from robotlab.bus.config import BrokerConfig
from robotlab.bus.wire import protocol
from robotlab.bus.wire.protocol import Body, Command, ErrorCode, Frame
from robotlab.errors import ConfigError, ProtocolError, StandbyConflict

from . import router, stopping
from .absences import Absences
from .admin import Admin
from .commands import Commands
from .deliveries import Deliveries
from .dlq import DeadLetterQueue, letter_budget
from .holds import Holds
from .journal import Journal, NoJournal
from .outbox import Outbox
from .registry import Peer, Registry
from .replica import Replica
from .restart import restore
from .security import KeyGuard, recv_with_key
from .standby import Standby
from .traffic import Traffic

log = logging.getLogger("robotlab.broker")

DRAIN_BATCH, INF = 256, float("inf")


class Broker:
    """Routes messages between bus members; owns presence, deliveries, acks and dead letters."""

    def __init__(self, config: BrokerConfig, context: zmq.Context | None = None) -> None:
        self.config = config
        self._expiry = config.expiry  # a property of the frozen config, read every message
        self._pack = protocol.packer()  # the loop's alone: a msgpack Packer is not thread-safe
        self.id = uuid.uuid4().hex[:12]
        self.context = context or zmq.Context.instance()
        self.registry = Registry()
        self.journal = (Journal(config.journal, config.journal_max_bytes) if config.journal
                        else NoJournal(config.journal_max_bytes))
        self.holds: Holds[Any, tuple[Peer, str]] = Holds(config.hold)
        self.dlq = DeadLetterQueue(config.dlq_max, self.journal, letter_budget(config))
        self.outbox = Outbox(self.journal, self.registry, self._transmit)
        self.deliveries = Deliveries(self.registry, self.dlq, self.outbox.transmit_settled,
                                     config.ack_timeout, config.max_handling, self.journal,
                                     self.holds, deliver=self._transmit)
        self.absences = Absences(self.holds, self.deliveries, self.journal)
        self.guard = (KeyGuard(config.keys_dir, self.context, config.key_file) if config.keys_dir
                      else None)
        self.standby = self._standby(config)
        self.replica = Replica(self.standby, self.journal, config.standby_sync, self.id.encode()) \
            if self.standby is not None and isinstance(self.journal, Journal) else None
        self.outbox.replica = self.replica
        self.serving = False
        """Whether the journal was taken back: at start-up, or by one of a standby pair when it
        starts to serve."""
        if self.standby is None:
            self.serve_from_journal()
        self.traffic = Traffic()
        self.admin = Admin(self)
        self.counters: Counter[str] = Counter()
        self.frames_in = 0  # frames read from members since the start (see _drain)
        self.started = monotonic()
        self.socket: zmq.Socket | None = None
        # where the socket is bound (a tcp port of 0 resolved), once bound
        self.endpoint = config.bind
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self._unroutable: set[bytes] = set()
        self._input: router.Readiness | None = None
        # frames sent: one after the drain's last ZMQ_EVENTS read may take the fd's edge
        self._sends = 0
        self._next_scan = 0.0
        self._next_timer = 0.0  # the earliest scan, ack or hold deadline when the turn's poll began
        self.on_tick: Callable[[str], None] = lambda status: None  # no service manager to tell
        """Called from the loop at least every quarter heartbeat with a status line (the
        entry point feeds systemd's watchdog with it; the broker knows nothing of systemd)."""
        self.user_id: str | None = None
        """The authenticated key of the message in dispatch (with keys only)."""
        self.commands = Commands(self)
        self.handlers = self.commands.table

    # -- lifecycle ----------------------------------------------------------------------------

    def bind(self) -> str:
        """Create and bind the ROUTER socket; return the bound endpoint (port resolved)."""
        sock = router.bind(self.config, self.context, self.guard)
        self.socket = sock
        self._input = router.Readiness(sock, self._wake_r)
        if self.standby is not None:  # the peer's states and journal wake the loop at once
            self._input.watch(self.standby.fd)
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        return self.endpoint

    def serve_from_journal(self) -> None:
        """Take back what the journal holds, once. One of a standby pair does so only when it
        starts to serve: until then its journal is a copy of its active peer's (see replica.py),
        and what its own file held from before is replaced, never held or dead-lettered here."""
        if self.serving:
            return
        self.serving = True
        if self.replica is not None:
            self.replica.active = True
        # the members a takeover waits to hear from (claims.py)
        members = self.replica.members if self.replica is not None else None
        requesters = self.replica.requesters if self.replica is not None else ()
        restore(self.journal.restore(), self.dlq, self.holds, self.deliveries, self.journal.path,
                members, requesters)

    def reload_keys(self) -> None:
        """Read the authorized keys again (SIGHUP); a folder that does not read keeps the keys in
        force."""
        if self.guard is None:
            log.info("reload: this broker runs without --keys; nothing to read")
            return
        try:
            owners = self.guard.reload()
        except ConfigError as exc:
            log.error("reload failed, the authorized keys in force stay: %s", exc)
            return
        log.info("reloaded authorized keys: %s", ", ".join(owners) or "none")

    def stop(self) -> None:
        """Ask the loop to finish its pass and return (safe from signal handlers and threads)."""
        self._stopping = True
        with contextlib.suppress(OSError):  # closed already: the loop has stopped
            os.write(self._wake_w, b"x")

    def run(self) -> None:
        """Serve until :meth:`stop` is called."""
        if self.socket is None:
            self.bind()
        log.info("broker %s listening on %s", self.id, self.endpoint)
        try:
            while not self._stopping:
                self.turn()
            # what came in last is routed and sent before the process exits
            stopping.last_turns(self.context, self.socket, self._drain, self.outbox.end_turn)
        finally:
            self._close()

    def turn(self) -> None:
        """One pass of the loop (bound only): wait for input or the next timer, drain what is
        readable, run what is due, commit the journal and send what waited on it."""
        assert self._input is not None, "the broker is not bound"
        woken = self._input.wait(self._poll_timeout_ms())  # see router.Readiness
        if woken:
            self._input.pending = self._drain()
        sends = self._sends
        try:
            now = monotonic()  # one clock read for the turn's end
            if now >= self._next_timer or self._unroutable or self.standby is not None:
                # Else nothing is due (a deadline a dispatch set since is read by the next
                # turn's poll): most turns skip the pass that walks every table.
                self._timers(now)
            self.outbox.end_turn(now)
            if not woken:  # nothing came in: a quiet moment for the journal's checkpoint
                self.journal.idle()
        except (ConfigError, StandbyConflict):
            raise  # two active brokers (see standby.py): this one must stop
        except Exception:  # a timer's bug costs that pass, never the loop
            self.counters["internal_errors"] += 1
            log.exception("broker: a timer pass failed")
        finally:
            if self._sends != sends:
                self._input.sent()

    def _standby(self, config: BrokerConfig) -> Standby | None:
        """This broker's side of a standby pair (None alone), under CURVE when it has keys."""
        try:
            return Standby.of(config, self.context,
                              self.guard.secure_pair if self.guard is not None else None)
        except ConfigError:
            if self.guard is not None:
                self.guard.stop()
            raise

    def _close(self) -> None:
        self.journal.close()
        if self.replica is not None:  # what the close committed, before the pair's socket goes
            self.replica.flush()
        if self.standby is not None:
            self.standby.close()
        if self.socket is not None:
            # the context's linger, which stopping.own() sets
            self.socket.close(linger=self.context.sockopts.get(zmq.LINGER, 0))
            self.socket = None
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.guard is not None:
            self.guard.stop()

    # -- the loop's steps ---------------------------------------------------------------------

    def _poll_timeout_ms(self) -> int:
        due = self._next_scan
        for deadline in (self.deliveries.next_deadline(), self.holds.next_deadline()):
            if deadline is not None and deadline < due:
                due = deadline
        self._next_timer = due
        commit = self.journal.next_commit()  # the outbox's, not a timer's
        due = commit if commit is not None and commit < due else due
        if self.standby is not None:
            due = min(due, self.standby.next_deadline() or INF)
        if self.replica is not None:
            due = min(due, self.replica.next_flush() or INF)
        return max(int((due - monotonic()) * 1000), 1)

    def _drain(self) -> bool:
        """Dispatch what waits, up to DRAIN_BATCH messages; True if cut short (more may wait)."""
        # It ends when ZMQ_EVENTS says nothing is left, not on a raised zmq.Again (which costs
        # more). With keys, reading ZAP metadata needs a zero-copy frame, which the keyless receive
        # does not pay for.
        # Compiled, each call below is a direct native call: a function held in a local (the
        # interpreter's trick) would be called through its Python wrapper instead. Frames are
        # counted in an attribute: an item of a Counter (a dict subclass written in Python) costs
        # a Python-level __getitem__ and __setitem__.
        keyed = self.guard is not None
        sock = self.socket
        assert sock is not None, "the broker is not bound"  # the loop runs between bind and close
        for _ in range(DRAIN_BATCH):
            # free unless raised: the fd fired (or input was pending), so a message almost
            # always waits
            try:
                frames = self._recv_keyed(sock) if keyed else router.recv(sock)
            except zmq.Again:  # it fired for a command that was not a message
                return False
            self.frames_in += 1
            self.dispatch(frames)
            if not protocol.readable(sock):
                return False
        return True

    def _recv_keyed(self, sock: zmq.Socket) -> list[Body]:
        frames, self.user_id = recv_with_key(sock)
        return frames

    def _timers(self, now: float) -> None:
        # Forgetting a peer may fail sends to others: those go in a fresh set, for the next pass.
        unroutable, self._unroutable = self._unroutable, set()
        for identity in unroutable:
            peer = self.registry.by_identity.get(identity)
            if peer is not None:
                self._forget(peer, "disconnected")
        if self.standby is not None:  # read the peer's states and journal, publish ours
            self.standby.step(now)
            if self.standby.serving(now):
                self.serve_from_journal()
            if self.replica is not None:
                self.replica.step(now)
        self.deliveries.expire(now)
        self.absences.expire(now)
        if now >= self._next_scan:  # walking every peer on every pass would not scale to 1,000s
            self._next_scan = now + self.config.heartbeat / 4
            self._scan_peers(now)
            self.on_tick(f"listening on {self.endpoint}; {len(self.registry.by_identity)} members, "
                         f"{len(self.dlq)} dead letters")

    def _scan_peers(self, now: float) -> None:
        for peer in self.registry.expired(now):
            self.counters["peers_expired"] += 1
            self._forget(peer, f"went silent (no traffic for {self.config.expiry:g}s)")
        for peer in list(self.registry.by_identity.values()):
            if peer.unconfirmed or now - peer.last_sent >= self.config.heartbeat:
                # seen: the peer may forget the replies and acks it kept (see
                # robotlab/bus/member/unconfirmed_replies.py)
                peer.unconfirmed = not self._transmit(peer, Command.HEARTBEAT,
                                                      {"seen": peer.frames_in}, b"")

    # -- dispatch -----------------------------------------------------------------------------

    def dispatch(self, frames: list[Body]) -> None:
        """Handle one inbound message: [identity, *protocol frames]. Never raises."""
        if len(frames) < 2:
            self.counters["dropped_malformed"] += 1
            return
        # recv copies the identity: bytes (a plain annotation: typing.cast is a call a message)
        identity: bytes = frames[0]  # type: ignore[assignment]
        body = frames[1:]
        try:
            frame = protocol.decode(body)
            peer = self.registry.by_identity.get(identity)
            if peer is None:
                if frame.command == Command.HELLO:
                    self.commands.on_hello(identity, None, frame)
                else:
                    self._error(identity, ErrorCode.NOT_READY,
                                f"say HELLO before {frame.command.name}", frame)
                return
            peer.expires = monotonic() + self._expiry
            peer.frames_in += 1
            handler = self.handlers.get(frame.command)
            if handler is None:
                self._error(identity, ErrorCode.UNKNOWN_COMMAND,
                            f"{frame.command.name} is not a command peers send", frame)
                return
            handler(identity, peer, frame)
        except ProtocolError as exc:
            self._reject(identity, exc)
        except Exception:
            self.counters["internal_errors"] += 1
            log.exception("broker: failed to handle a %d-frame message", len(body))

    def _reject(self, identity: bytes, exc: ProtocolError) -> None:
        if exc.code == "bad_signature":
            self.counters["dropped_bad_signature"] += 1
            return
        self._error(identity, exc.code, str(exc), None, ref=exc.ref)

    def _error(self, identity: bytes, code: str, detail: str, frame: Frame | None,
               ref: str | None = None) -> None:
        self.counters[f"error_{code}"] += 1
        header: dict[str, Any] = {"code": code, "detail": detail[: protocol.TEXT_MAX]}
        # a frame's id is unchecked where the schema has no id
        named: Any = frame.header.get("id") if frame is not None else ref
        # only an id-shaped ref: any other would make the ERROR itself undecodable
        if isinstance(named, str) and 0 < len(named) <= protocol.ID_MAX:
            header["ref"] = named
        self._send_frames(identity, protocol.encode(Command.ERROR, header))

    # -- sending ------------------------------------------------------------------------------

    def _forget(self, peer: Peer, why: str, gone: bool = False) -> None:
        self.registry.remove(peer)
        if gone and self.replica is not None:  # the peer need not wait for it at a takeover
            self.replica.left(peer.instance)
        log.info("peer %s (%s) %s", peer.name, peer.instance, self.absences.left(peer, why, gone))

    def _transmit(self, peer: Peer, command: Command, header: dict[str, Any], body: Body) -> bool:
        sent = self._send_frames(peer.identity, protocol.encode(command, header, body, self._pack))
        if sent:
            peer.last_sent = monotonic()
        return sent

    def _send_frames(self, identity: bytes, frames: list[Body]) -> bool:
        self._sends += 1
        try:
            router.send(self.socket, identity, frames)  # type: ignore[arg-type]  # sent only between bind and close
            return True
        except zmq.Again:
            self.counters["send_would_block"] += 1
        except zmq.ZMQError as exc:
            self.counters["send_unroutable"] += 1
            self._unroutable.add(identity)
            log.debug("cannot send to %r: %s", identity, exc)
        return False
