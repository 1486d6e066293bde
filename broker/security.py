"""CURVE on the broker's ROUTER: who may connect, and which robot names each key may use.

pyzmq's ZAP authenticator (a thread on the broker's context) admits only the public keys in
``KEYS/authorized`` (read again on SIGHUP); the handshake of any other key fails before a
single frame reaches the loop, and is logged by the broker with the peer's address and without
the key; a client offering no key at all is refused before ZAP is asked, and logged from the
ROUTER's monitor (:class:`KeylessWatcher`). ZAP then tags every message of an admitted
connection with the key (``User-Id``),
:meth:`KeyGuard.refusal` checks a HELLO's name against that key's ``robots`` metadata, and the
key's ``roles`` say whether the connection may use the admin commands.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils.monitor import recv_monitor_message

from robotlab.bus.certificates import (
    AUTHORIZED,
    BROKER_KEY,
    Grant,
    allows,
    authorized_keys,
    certificate_exists,
    read_certificate,
)
from robotlab.bus.wire.protocol import Body
from robotlab.errors import ConfigError

log = logging.getLogger("robotlab.broker")

STANDBY_DOMAIN = "robotlab-standby"
"""The ZAP domain of a standby pair's state socket: only the pair's own broker key may read it."""

_LAST = int(zmq.NOBLOCK)
_RCVMORE = int(zmq.RCVMORE)


class KeyGuard:
    """The broker's key pair, the authorized keys with their robot names, and the ZAP thread."""

    def __init__(self, keys_dir: str, context: zmq.Context, secret_file: str | None = None) -> None:
        self.folder = Path(keys_dir)
        secret_path = Path(secret_file) if secret_file else self.folder / f"{BROKER_KEY}.key_secret"
        if not certificate_exists(secret_path):
            raise ConfigError(f"no broker key at {secret_path}; make one with `robotlab keys new "
                              f"broker --dir {keys_dir}`")
        self.public, self.secret = _load_pair(secret_path)
        self.grants: dict[str, Grant] = {}
        self.reload()
        self.authenticator = _Authenticator(context)
        self.authenticator.start()
        # A callback instead of configure_curve(location=...): it reads self.grants, so a reload
        # (SIGHUP) takes effect at the next handshake, and a refusal is logged.
        self.authenticator.configure_curve_callback(domain="*", credentials_provider=self)
        self.authenticator.configure_curve_callback(domain=STANDBY_DOMAIN,
                                                    credentials_provider=self)
        self.watcher: KeylessWatcher | None = None

    def reload(self) -> list[str]:
        """Read ``authorized/`` again; return the owners of the keys now accepted.

        Raises:
            ConfigError: a file there is unreadable or not a public key (the keys in force stay).
        """
        self.grants = authorized_keys(self.folder)  # one assignment: the ZAP thread sees old or new
        if not self.grants:
            log.warning("no keys in %s: every client will be refused", self.folder / AUTHORIZED)
        return sorted(grant.owner for grant in self.grants.values())

    def callback(self, domain: str, client_key: bytes) -> bool:
        """ZAP's question, on its thread: may this public key (z85) connect at all? To a standby
        pair's state socket only the pair's broker key may: it carries the journal."""
        if domain == STANDBY_DOMAIN:
            if client_key == self.public:
                return True
            log.info("refused a connection to the standby state socket from %s: only the pair's "
                     "broker key may read it", self.authenticator.peer or "a local (ipc://) client")
            return False
        if client_key.decode("ascii", "replace") in self.grants:
            return True
        # Before any HELLO: the robot name the client will ask for is not known yet, its address is.
        peer = self.authenticator.peer or "a local (ipc://) client"
        log.info("refused a connection from %s: its CURVE key is not in %s", peer,
                 self.folder / AUTHORIZED)
        return False

    def owner(self, user_id: str | None) -> str:
        """Whose key a connection authenticated with (its file's name in ``authorized/``)."""
        grant = self.grant(user_id)
        return grant.owner if grant is not None else "an unknown key"

    def secure(self, socket: zmq.Socket) -> None:
        """Make ``socket`` a CURVE server (call before bind)."""
        socket.curve_server = True
        socket.curve_secretkey = self.secret
        socket.curve_publickey = self.public
        if self.watcher is not None:  # a bind tried again: the socket before it is gone
            self.watcher.stop()
        self.watcher = KeylessWatcher(socket)

    def secure_pair(self, publisher: zmq.Socket, subscriber: zmq.Socket) -> None:
        """Put a standby pair's state sockets under CURVE (call before bind and connect): both
        brokers of a pair hold the one broker key its clients trust, so each is the CURVE server
        of its own state socket and a client of its peer's with that same key; ZAP admits no
        other key there (:data:`STANDBY_DOMAIN`), so the replicated journal is neither read nor
        fed by anyone else."""
        publisher.curve_server = True
        publisher.curve_secretkey = self.secret
        publisher.curve_publickey = self.public
        publisher.zap_domain = STANDBY_DOMAIN.encode()
        subscriber.curve_serverkey = self.public
        subscriber.curve_publickey = self.public
        subscriber.curve_secretkey = self.secret

    def grant(self, user_id: str | None) -> Grant | None:
        """What the key ``user_id`` may do; None for a key that is not authorized."""
        return self.grants.get(user_id or "")

    def refusal(self, user_id: str | None, name: str) -> str | None:
        """Why a connection authenticated as ``user_id`` may not HELLO as ``name``; None if it
        may."""
        grant = self.grant(user_id)
        if grant is None:
            return "the connection carries no authorized key (was it removed from authorized/?)"
        if allows(grant.robots, name):
            return None
        allowed = ", ".join(sorted(grant.robots)) or "no robot names"
        return f"this key may not use the robot name {name!r} (it may use: {allowed})"

    def stop(self) -> None:
        """Stop the ZAP thread and the handshake watcher."""
        if self.watcher is not None:
            self.watcher.stop()
        self.authenticator.stop()


class KeylessWatcher:
    """Logs the connections refused before ZAP is asked: a client offering no CURVE key at all.

    A thread reads the ROUTER's monitor socket. Which side of a refused handshake sees the
    mismatch is a race: each reads the other's greeting, and the one that reads it first closes
    the connection. When the broker wins, its monitor says the client offered no key. When the
    client wins (a loaded client host, typically), it closes before its own greeting has left,
    and the broker only sees a handshake that broke off; ZeroMQ does not reconnect a client that
    saw a protocol error, so the next try comes at the client's own backoff and may lose the
    race again. Both are logged, the second at most once every ``BROKE_OFF_EVERY`` seconds, since
    a TCP health check looks the same.
    """

    BROKE_OFF_EVERY = 30.0
    """Seconds between two log lines about handshakes that broke off."""

    def __init__(self, socket: zmq.Socket) -> None:
        events = zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
        # An address of its own: pyzmq's default is named after the socket's fd, which a closed
        # socket's monitor may still hold.
        self.monitor = socket.get_monitor_socket(events, f"inproc://robotlab-keyless-{id(self)}")
        self._broke_off_logged = float("-inf")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="robotlab-broker-handshakes",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self.monitor.poll(200):
                    self._log(recv_monitor_message(self.monitor))
        finally:
            self.monitor.close(linger=0)

    def _log(self, event: Mapping[str, Any]) -> None:
        endpoint = event["endpoint"].decode(errors="replace")
        if event["event"] == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
            keyless = event["value"] == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
            log.info("refused a connection on %s: %s", endpoint,
                     "it offered no CURVE key (a client started without --keys)" if keyless
                     else f"its handshake broke the protocol ({event['value']!r})")
            return
        now = time.monotonic()
        if now - self._broke_off_logged >= self.BROKE_OFF_EVERY:
            self._broke_off_logged = now
            log.info("refused a connection on %s: it broke off during the CURVE handshake (a "
                     "client started without --keys, one holding another broker's key, or a "
                     "port probe; logged once every %.0fs)", endpoint, self.BROKE_OFF_EVERY)

    def stop(self) -> None:
        """End the thread (within a poll's 0.2 s); it closes the monitor socket."""
        self._stop.set()
        self._thread.join(timeout=2)


class _Authenticator(ThreadAuthenticator):
    """pyzmq's ZAP thread, remembering the address of the connection it is deciding on (for the
    log)."""

    peer = ""
    """The IP address of the connection being authenticated (empty for ipc://)."""

    async def handle_zap_message(self, msg: list[bytes]) -> None:
        """Note the request's address (its fourth frame, by the ZAP spec), then decide as pyzmq
        does."""
        self.peer = msg[3].decode("utf-8", "replace") if len(msg) > 3 else ""
        await super().handle_zap_message(msg)


def _load_pair(secret_file: Path) -> tuple[bytes, bytes]:
    public, secret = read_certificate(secret_file)
    if secret is None:
        raise ConfigError(f"{secret_file} holds no secret key")
    return public, secret


def recv_with_key(socket: zmq.Socket) -> tuple[list[Body], str | None]:
    """Receive one message without blocking, and the authenticated key ZAP attached to it."""
    first = socket.recv(_LAST, copy=False)
    frames: list[Body] = [first.bytes]
    while socket.get(_RCVMORE):
        frames.append(socket.recv(_LAST) if len(frames) < 2
                      else socket.recv(_LAST, copy=False).buffer)
    key = first.get("User-Id")
    return frames, key if isinstance(key, str) else None
