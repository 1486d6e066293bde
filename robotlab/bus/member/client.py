"""The public bus client: connect, send with delivery tracking, request/reply, handle inbound.

::

    from robotlab import bus

    with bus.connect("tcp://127.0.0.1:5555", name="alice") as alice:
        alice.send("bob", {"task": "hi"}).wait(5)          # delivered, or DeliveryFailed
        answer = alice.request("bob", "ping", timeout=5)   # the reply Message, or ReplyTimeout

Inbound messages go to the handler given to :meth:`BusClient.on_message`, one at a time and in
order, on the client's dispatcher thread. A one-argument handler is acked when it returns (its
return value, unless None, goes back as the reply) and nacked with the exception's message when it
raises; ``manual=True`` hands it a :class:`~robotlab.bus.member.message.Delivery` to settle by hand.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Final, Literal

import zmq

from robotlab.errors import BusError

from .. import config
from ..keys import KeyConfig, client_keys
from ..wire import protocol
from ..wire.plain_data import pack_plain
from ..wire.protocol import Body, Command
from . import message_spans
from .admin_calls import AdminCalls
from .dispatcher import INLINE, Dispatcher
from .incoming_frames import Inbound
from .message import Message
from .outgoing_frames import check_size, reply_body, reply_frames, send_header
from .outstanding import Outstanding
from .tracking import Tracker

DEFAULT_MAX_BYTES: Final = 16 * 1024 * 1024
# Defaults of the methods that also take **options, as names: mypyc (robotlab/bus/native.py)
# fails to write the signature of a compiled function with a literal default before **kwargs.
REQUEST_TIMEOUT, ADMIN_TIMEOUT, REQUEST = 30.0, 5.0, "request"


class BusClient:
    """A member of the bus: one DEALER connection to a broker, run by a background I/O thread.

    ``keys``: a :class:`KeyConfig`; None (the default) finds them as every client does
    (:func:`~robotlab.bus.keys.client_keys`: ``$ROBOT_LAB_KEYS``, then ``NAME.key_secret`` or
    ``robotlab.key_secret``); False joins without CURVE whatever the environment says.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        instance: str | None = None,
        role: str = "client",
        parent: str | None = None,
        max_inflight: int | None = None,
        context: zmq.Context | None = None,
        keys: KeyConfig | Literal[False] | None = None,
    ) -> None:
        from .link import Link  # kept local: Link is an implementation detail of the client

        # ConfigError, not ZeroMQ's, for an http:// address
        self.url = config.check_endpoints(url)
        # 12 random hex digits from os.urandom, not uuid: importing uuid (and platform with it)
        # would cost every handler-only member memory for nothing else.
        self.instance = instance or os.urandom(6).hex()
        self.name = f"client-{self.instance[:6]}" if name is None else config.check_name(name)
        self._epoch, self._ids = os.urandom(3).hex(), itertools.count(1)
        self._lock = threading.Lock()
        self._admin = AdminCalls(self._lock)
        self.max_message_bytes = DEFAULT_MAX_BYTES
        self.dispatcher = Dispatcher(self)
        # The token proves, after a reconnect, that this is the client that claimed the instance:
        # the instance id is public (ps shows it), the token never leaves this HELLO.
        # os.urandom is what secrets.token_hex reads, without the import of hmac and OpenSSL's
        # libcrypto that secrets brings (3 MB resident in every member).
        hello = {"name": self.name, "instance": self.instance, "token": os.urandom(16).hex(),
                 "role": role, "pid": os.getpid()}
        if parent:
            hello["parent"] = parent
        if max_inflight:
            hello["max_inflight"] = max_inflight
        if keys is None and not url.startswith("inproc://"):  # CURVE never runs over inproc
            keys = client_keys(self.name)
        self._link = Link(context or zmq.Context.instance(), url, hello, self._on_welcome,
                          keys or None)
        self._link.holding = self.dispatcher.holding
        self._link.claims = self._claims
        self._outstanding = Outstanding(self._lock, self._link)
        self._link.on_frame = Inbound(self._link.post, self._outstanding, self._admin,
                                      self.dispatcher).on_frame
        # what ps shows of this member: robotlab.bus.member.heartbeat_stats
        self.stats = self._link.stats
        self._embedded: Any = None
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, timeout: float | None = 5.0) -> BusClient:
        """Connect and wait for the broker's WELCOME.

        Raises:
            PeerUnavailable: no WELCOME within ``timeout``, or every broker refused this
                client's handshake (its keys), at once (it keeps trying in the background if
                you catch this); ``StandbyPassive``, a passive standby answered: try again.
            ConfigError: the broker refused this client's name for its key (``forbidden``).
        """
        self._link.start()
        self.dispatcher.start()
        if timeout is not None and not self._link.wait_welcome(timeout, until_refused=True):
            raise self._link.not_welcomed(timeout)
        return self

    def wait_welcome(self, timeout: float) -> bool:
        """Up to ``timeout`` s: True once welcomed, False if not yet (it keeps trying),
        ConfigError if refused."""
        return self._link.wait_welcome(timeout)

    def no_answer(self, timeout: float) -> str:
        """The one line that says no broker welcomed this client within ``timeout``, and why
        not."""
        return self._link.no_answer(timeout)

    @property
    def keys(self) -> KeyConfig | None:
        """The CURVE keys this client joins with (None: no CURVE)."""
        return self._link.keys

    @property
    def alive(self) -> bool:
        """True while the I/O thread runs (connected or still trying); False once it died or was
        closed."""
        return self._link.alive

    @property
    def connected(self) -> bool:
        """True while the broker has welcomed this client."""
        return self._link.welcomed.is_set()

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Block until (re)connected; False on timeout."""
        return self._link.welcomed.wait(timeout)

    def close(self, bye: bool = True, drain: float | None = 5.0) -> None:
        """Leave the bus: let the handler finish (up to ``drain`` s; None: as long as it takes),
        say BYE, stop the threads, fail what still waits. Messages still queued here are not
        handled: the broker fails them over or dead-letters them."""
        if self._closed:
            return
        self._closed = True
        self.dispatcher.stop(drain)
        self._link.close(bye=bye)
        with self._lock:
            asked = self._admin.waiting()
        for tracker in (t for t in self._outstanding.take_all() + asked if not t.settled):
            tracker.fail("undeliverable", "the client was closed before a receipt came")
        if self._embedded is not None:
            self._embedded.stop()

    def __enter__(self) -> BusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sending ------------------------------------------------------------------------------

    def send(
        self,
        to: str,
        content: Any,
        *,
        type: str = "message",
        any: bool = False,
        idempotent: bool = False,
        to_instance: str | None = None,
        reply_to: str | None = None,
        ack: int | None = None,
        deadline: float | None = None, max_handling: float | None = None,
        busy_retry: float = 10.0, receipt: bool = True,
        untracked: bool = False,
        expect_reply: bool = False, hold: float | None = None,
        on_tracker: Callable[[Tracker], None] | None = None,
    ) -> Tracker:
        """Send ``content`` to every live robot named ``to`` (one of them with ``any=True``).

        Returns a :class:`Tracker`; ``tracker.wait(timeout)`` blocks until delivered. While the
        receiver is ``busy`` (at its in-flight bound) the message is sent again with backoff for
        up to ``busy_retry`` seconds before the tracker fails with :class:`Busy`. With
        ``receipt=False`` the broker reports only failures (to the DLQ and the log) and the
        tracker never settles: fire and forget. ``untracked=True`` (used for replies) also skips
        the receiver's ack: nothing is held in flight for it. ``expect_reply=True`` (what
        :meth:`send_request` uses) hands the reply to ``tracker.reply()`` instead of the
        handler. ``max_handling`` (seconds, capped by the broker's maximum) bounds how long the
        receiver may hold it, touched or not; ``hold`` (seconds) overrides the broker's
        ``--hold``. ``on_tracker`` is called with the Tracker before the message leaves: what
        the caller notes of it there (its id, say) is noted before any answer can arrive, on
        the I/O thread or a handler's.

        Raises:
            BoundaryError: ``content`` is not plain data; nothing was sent.
            BusError: the encoded message is larger than the broker accepts.
            ProtocolError: a header field breaks :data:`protocol.SCHEMA` (an id too long...).
        """
        body = pack_plain(content, "content")
        check_size(body, self.max_message_bytes)
        message_id = f"{self._epoch}.{next(self._ids)}"
        header = send_header(message_id, to, type, (any, idempotent, untracked, to_instance,
                                                     reply_to, ack, deadline, max_handling),
                             receipt, hold)
        tracker = Tracker(message_id, to, busy_retry, self._link.wait_reading)
        self._post(tracker, header, body, receipt=receipt, expect_reply=expect_reply,
                   untracked=untracked, on_tracker=on_tracker)
        return tracker

    def _post(self, tracker: Tracker, header: dict[str, Any], body: Body, *, receipt: bool,
              expect_reply: bool, untracked: bool,
              on_tracker: Callable[[Tracker], None] | None) -> None:
        """Encode a SEND, track it, let the caller note its Tracker, then send it (the options
        are :meth:`send`'s)."""
        # checked as the broker will (it would refuse it: say so here); traced when on
        message_spans.stamp(header)
        frames = protocol.encode(Command.SEND, header, body)
        self._outstanding.register(tracker, frames, receipt, expect_reply)
        tracker.sent = self.connected
        if on_tracker is not None:
            on_tracker(tracker)
        # a reply: kept until confirmed
        (self._link.post_kept if untracked else self._link.post)(frames)

    def request(self, to: str, content: Any, *, timeout: float = REQUEST_TIMEOUT,
                type: str = REQUEST, **options: Any) -> Message:
        """Send and wait for the reply.

        Raises:
            DeliveryFailed: the request could not be delivered (reason attached).
            ReplyTimeout: no reply in ``timeout`` seconds; the message says what became of it.
        """
        if self._link.in_drain:  # an inline handler's thread (the I/O thread, or a caller reading)
            raise BusError("an inline handler cannot wait for a reply: it runs on the thread that "
                           "would read it")
        # the broker waits no longer either
        deadline = options.pop("deadline") if "deadline" in options else time.time() + timeout
        # Compiled, a call with ``**options`` goes through the generic keyword path (a dict,
        # then parsed again on the other side): a plain request calls send directly.
        tracker = (self.send(to, content, type=type, expect_reply=True, deadline=deadline)
                   if not options else
                   self.send(to, content, type=type, expect_reply=True, deadline=deadline,
                             **options))
        try:
            return tracker.reply(timeout, deadline=deadline)
        finally:
            self._outstanding.forget_request(tracker.id)

    def send_request(self, to: str, content: Any, *, type: str = REQUEST,
                     **options: Any) -> Tracker:
        """Send a request and return its Tracker at once; ``tracker.reply(timeout)`` waits. A
        Tracker let go of unanswered is forgotten in time (``abandoned_requests.py``): a reply
        still to come goes to the handler."""
        return self.send(to, content, type=type, expect_reply=True, **options)

    def reply(self, message: Message, content: Any, *, type: str = "reply") -> None:
        """Answer ``message``, to exactly the instance that sent it; the reply carries its ack.

        Replies are fire and forget (``receipt=False``): the requester's own resend covers a
        reply lost with a broker, and this client answers such a duplicate from its reply cache.
        It returns no Tracker: nothing is tracked for a reply, so one would never settle."""
        self.send_reply(message, reply_body(message, content), type)

    def send_reply(self, message: Message, body: Body, type: str = "reply") -> None:
        """:meth:`reply` with the body packed already (by ``pack_plain``): sent as it is, and
        cached."""
        check_size(body, self.max_message_bytes)
        message_id = f"{self._epoch}.{next(self._ids)}"
        self._link.post_kept(reply_frames(message_id, message, body, type, self.dispatcher))

    def settle_delivery(self, delivery: int, nack_reason: str | None = None) -> None:
        """ACK ``delivery`` to the broker, or NACK it with ``nack_reason`` (the dispatcher's
        call)."""
        if nack_reason is None:
            self._link.ack(delivery)
        else:
            reason = nack_reason[: protocol.TEXT_MAX]  # the broker refuses longer reasons
            nack = {"delivery": delivery, "reason": reason}
            self._link.post_kept(protocol.encode(Command.NACK, nack))

    def effect_done(self, message: Message, key: str) -> None:
        """Tell the broker that the side-effect call ``key`` (its idempotency key, see
        :mod:`robotlab.tools.effects`) completed while handling ``message``: the broker keeps
        the key with the message (in its journal), and a later attempt of it, after a crash, a
        cut or a broker restart, has it in ``Message.effects_done``. Sent at once, and kept until
        the broker confirms it, as a reply is. Nothing is sent for an untracked message or a
        key longer than ``protocol.ID_MAX`` characters."""
        if message.delivery and len(key) <= protocol.ID_MAX:
            touch = {"deliveries": [message.delivery], "effects": [key]}
            self._link.post_kept(protocol.encode(Command.TOUCH, touch))

    # -- receiving ----------------------------------------------------------------------------

    def on_message(self, handler: Callable[..., Any], *, manual: bool = False,
                   inline: bool | None = None) -> BusClient:
        """Replace the inbound handler (see the module docstring for the two forms);
        ``inline=True`` (or :func:`robotlab.bus.inline` on it) runs it on the I/O thread."""
        self.dispatcher.handler = handler
        self.dispatcher.manual = manual
        self.dispatcher.inline = bool(getattr(handler, INLINE, False) if inline is None else inline)
        return self

    # -- admin --------------------------------------------------------------------------------

    def admin(self, op: str, timeout: float = ADMIN_TIMEOUT, **args: Any) -> Any:
        """Ask the broker an admin question (``ping``, ``ps``, ``stats``, ``dlq.list``, ...).

        Raises:
            BusError: the broker refused the request (its reason attached).
            PeerUnavailable: no answer within ``timeout``, or the client is (or was meanwhile)
                closed.
        """
        return self._admin.ask(self._link, f"{self._epoch}.a{next(self._ids)}", op, args, timeout)

    def replay(self, dlq_id: str, timeout: float = 5.0, force: bool = False) -> Tracker:
        """Route a dead letter again; the returned Tracker settles with its new fate. A letter
        whose work may have run (``maybe_ran``) is refused (BusError) unless ``force``: it may
        run twice."""
        ids = f"{self._epoch}.{next(self._ids)}", f"{self._epoch}.a{next(self._ids)}"
        return self._admin.replay(self._link, self._outstanding, ids, dlq_id, timeout, force)

    # -- called by the I/O thread -------------------------------------------------------------

    def _claims(self) -> Body:
        """A HELLO's body: what this member had, in half the largest message the broker takes."""
        return self.dispatcher.claims(self.max_message_bytes // 2)

    def _on_welcome(self, header: dict[str, Any]) -> None:
        self.max_message_bytes = int(header.get("max_message_bytes", DEFAULT_MAX_BYTES))
        self._outstanding.send_again()
