"""Admin requests (REQUEST/REPLY): ping, ps, stats, the messages flowing, and the dead-letter
queue."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any, Final, Protocol

from robotlab.bus.config import BrokerConfig
from robotlab.bus.wire import protocol

from .deliveries import Deliveries
from .dlq import DeadLetterQueue
from .records import InFlightCopy
from .registry import Peer, Registry
from .traffic import Traffic

OPEN_OPS = frozenset({"ping"})
RESULT_IN_HEADER: Final = 16 * 1024
"""A result packed larger than this travels as the REPLY's body, not in its header (whose
decoders stop at ``MAX_HEADER_BYTES``): ``ps`` of hundreds of members, a long dead-letter queue."""


class NotThere(LookupError):
    """An op's argument names nothing the broker has (a dead-letter id), or nothing it may act
    on without being forced; its message is the reply."""
"""Ops any member may use; every other op needs an admin peer."""


class BrokerState(Protocol):
    """What the admin ops read and act on (``Broker`` is one); a protocol, so no import cycle."""

    id: str
    config: BrokerConfig
    started: float
    registry: Registry
    counters: Counter[str]
    frames_in: int
    deliveries: Deliveries
    dlq: DeadLetterQueue
    traffic: Traffic


class Admin:
    """Answers REQUEST frames. Each op is a method named in the literal table below."""

    def __init__(self, broker: BrokerState) -> None:
        self.broker = broker
        self.ops: dict[str, Callable[[Peer, dict[str, Any]], Any]] = {
            "ping": self.ping,
            "ps": self.ps,
            "stats": self.stats,
            "traffic": self.traffic,
            "dlq.list": self.dlq_list,
            "dlq.replay": self.dlq_replay,
            "dlq.purge": self.dlq_purge,
        }

    def answer(self, peer: Peer, header: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """The REPLY to the REQUEST ``header``: its header, and its body (a result larger than
        :data:`RESULT_IN_HEADER`, packed; a reader takes ``result`` from the header when it is
        there, else from the body). A result no message could carry is refused, naming the op."""
        reply = self.handle(peer, header)
        if "result" not in reply:
            return reply, b""
        packed = protocol.pack(reply["result"])
        if len(packed) <= RESULT_IN_HEADER:
            return reply, b""
        if len(packed) > self.broker.config.max_message_bytes - protocol.MAX_HEADER_BYTES:
            return {"id": reply["id"], "ok": False,
                    "error": f"{header['op']}: the answer is {len(packed)} bytes, more than a "
                             f"message may carry; ask for less (its limit argument)"}, b""
        del reply["result"]
        return reply, packed

    def handle(self, peer: Peer, header: dict[str, Any]) -> dict[str, Any]:
        """Run one op and build the REPLY header {id, ok, result | error}."""
        op = self.ops.get(header["op"])
        if op is None:
            return {"id": header["id"], "ok": False,
                    "error": f"unknown op {header['op']!r}; known: {', '.join(self.ops)}"}
        if not peer.admin and header["op"] not in OPEN_OPS:
            return {"id": header["id"], "ok": False,
                    "error": f"forbidden: {header['op']!r} needs an admin key "
                    "(make one with `robotlab keys new NAME --robot '*' --role admin`)"}
        given = header.get("args")
        args: dict[str, Any] = given if isinstance(given, dict) else {}
        try:
            return {"id": header["id"], "ok": True, "result": op(peer, args)}
        except NotThere as exc:
            return {"id": header["id"], "ok": False, "error": str(exc)}
        except (KeyError, TypeError, ValueError) as exc:
            return {"id": header["id"], "ok": False,
                    "error": f"{header['op']}: bad arguments ({exc})"}

    def ping(self, peer: Peer, args: dict[str, Any]) -> dict[str, Any]:
        """Liveness and identity of the broker."""
        b = self.broker
        return {"broker": b.id, "bind": b.config.bind,
                "uptime": round(time.monotonic() - b.started, 3), "peers": len(b.registry)}

    def ps(self, peer: Peer, args: dict[str, Any]) -> list[dict[str, Any]]:
        """Every live peer (robots first, then clients), as ``robotlab ps`` lists them."""
        now = time.monotonic()
        rows = [p.describe(now) | {"oldest": oldest(self.broker.deliveries.inflight, p, now)}
                for p in self.broker.registry.by_identity.values()]
        if not args.get("all"):
            rows = [r for r in rows if r["role"] == "robot"]
        return sorted(rows, key=lambda r: (r["role"] != "robot", r["name"], r["instance"]))

    def stats(self, peer: Peer, args: dict[str, Any]) -> dict[str, Any]:
        """Counters: frames, errors by code, deliveries, dead letters."""
        b = self.broker
        counters = dict(b.counters) | dict(b.deliveries.counters)
        counters.update(frames_in=b.frames_in, dlq_size=len(b.dlq), dlq_bytes=b.dlq.bytes,
                        dlq_evicted=b.dlq.evicted, in_flight=len(b.deliveries.inflight))
        return counters

    def traffic(self, peer: Peer, args: dict[str, Any]) -> dict[str, Any]:
        """The messages routed after ``args["after"]`` (a number from an earlier answer's
        ``last``; 0: any), at most ``args["limit"]`` (default 50, at most 500) of the newest:
        sender, target, type and size, never contents."""
        after, limit = args.get("after", 0), args.get("limit", 50)
        if not isinstance(after, int) or not isinstance(limit, int) or limit < 0:
            raise ValueError("after and limit are whole numbers, limit 0 or more")
        return self.broker.traffic.after(after, min(limit, 500))

    def dlq_list(self, peer: Peer, args: dict[str, Any]) -> list[dict[str, Any]]:
        """Dead letters, oldest first, bodies still msgpack (see ``DeadLetter.describe``): those
        after the letter ``args["after"]`` (a dlq id; none: from the oldest), at most
        ``args["limit"]`` of them (none: all); or the ``args["newest"]`` newest."""
        after, limit, newest = args.get("after"), args.get("limit"), args.get("newest")
        if newest is not None:
            if not isinstance(newest, int) or newest < 0:
                raise ValueError("newest is a whole number, 0 or more")
            return [letter.describe() for letter in self.broker.dlq.newest(newest)]
        if after is not None and not isinstance(after, str):
            raise ValueError("after is a dead letter's id (dl-N)")
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise ValueError("limit is a whole number, 0 or more")
        return [letter.describe() for letter in self.broker.dlq.page(after, limit)]

    def dlq_replay(self, peer: Peer, args: dict[str, Any]) -> dict[str, Any]:
        """Route a dead letter again under a fresh id of the broker's making; its receipt goes to
        the requester, under the requester's ``args["ref"]`` (default: the new id). A letter whose
        work may have run is replayed only with ``args["force"]`` true.

        The caller never chooses the id the broker dedupes on: a chosen id could collide with
        a real message of the original sender and answer it with the replay's receipt.
        """
        dlq_id = str(args["dlq_id"])
        letter = self.broker.dlq.get(dlq_id)
        if letter is None:
            raise NotThere(f"no dead letter {dlq_id!r}")
        if letter.maybe_ran and args.get("force") is not True:
            raise NotThere(f"{dlq_id} may have run already ({letter.reason}: {letter.detail}): a "
                           "replay may run it twice; replay it with force "
                           "(`robotlab dlq replay --force`) if it is safe to run again")
        self.broker.dlq.take(dlq_id)
        header = {k: v for k, v in letter.header.items() if k not in {"delivery", "attempt"}}
        header["id"] = f"replay-{uuid.uuid4().hex}"
        ref = args.get("ref")
        named = isinstance(ref, str) and 0 < len(ref) <= protocol.ID_MAX
        receipt_id = ref if named else header["id"]
        self.broker.deliveries.route(header, letter.body, notify=peer.instance,
                                     key=("", header["id"]), receipt_id=receipt_id)
        return {"dlq_id": letter.dlq_id, "id": header["id"], "ref": receipt_id,
                "to": header.get("to")}

    def dlq_purge(self, peer: Peer, args: dict[str, Any]) -> dict[str, Any]:
        """Drop one dead letter (``dlq_id``) or all of them."""
        dlq_id = args.get("dlq_id")
        return {"purged": self.broker.dlq.purge(str(dlq_id) if dlq_id is not None else None)}


def oldest(inflight: dict[int, InFlightCopy], peer: Peer, now: float) -> float | None:
    """Seconds the oldest delivery ``peer`` holds has been in flight; None when it holds none."""
    started = [inflight[d].started for d in peer.inflight if d in inflight]
    return round(now - min(started), 3) if started else None
