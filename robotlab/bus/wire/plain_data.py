"""What may cross a process boundary: plain data, checked before anything is sent.

Plain data is str, int (64-bit), float, bool, None, bytes, list, tuple (arrives as a list) and
dict with str or int keys, nested. Library models cross through their dump: anything with a
``to_dict()`` method, and pydantic models (``model_dump()``). Everything else raises
:class:`~robotlab.errors.BoundaryError` naming the type and where it sits, e.g.
``payload["items"][2] is a function``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

import msgpack

from robotlab.errors import BoundaryError

_SCALARS: Final = (str, bytes, float, bool, type(None))
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
_MAX_DEPTH: Final = 100
KEEP_BUFFER: Final = 1024 * 1024
"""A kept Packer's buffer grows to the largest value it packed: past this, it is not kept."""


class _Slot:
    """A thread's kept Packer, or None while that thread is packing with it."""

    __slots__ = ("packer",)

    def __init__(self) -> None:
        self.packer: Any = None


class ThreadPacker:
    """``msgpack.packb`` with one ``msgpack.Packer`` kept per thread.

    ``packb`` builds a new Packer, and its 256 KiB buffer, on every call: about half of what
    packing a header or a small body costs, at every member, for every message. A Packer is not
    thread-safe, hence one per thread; it is taken out while it packs, so a nested call on the
    same thread (a ``default`` hook that packs) gets a fresh one instead of a half-written buffer.
    """

    def __init__(self, default: Callable[[Any], Any] | None = None) -> None:
        self._local = threading.local()
        self._default = default

    def pack(self, value: Any) -> bytes:
        """The same bytes as ``msgpack.packb(value, use_bin_type=True, default=...)``."""
        # one thread-local read; the rest is native
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is None:
            slot = self._local.slot = _Slot()
        packer = slot.packer
        if packer is None:
            packer = msgpack.Packer(use_bin_type=True, default=self._default)
        else:
            slot.packer = None
        # on an error the slot stays empty: the next call makes a new one
        data: bytes = packer.pack(value)
        if len(data) <= KEEP_BUFFER:
            slot.packer = packer
        return data


def to_plain(value: Any, where: str = "payload") -> Any:
    """Return ``value`` as plain data, converting library models through their dump.

    Raises:
        BoundaryError: when something in ``value`` cannot cross a process boundary.
    """
    return _plain(value, where, 0, set())


def pack_plain(value: Any, where: str = "payload") -> bytes:
    """Encode ``value`` as msgpack, or raise BoundaryError exactly as :func:`to_plain` would.

    msgpack's C packer walks plain data far faster than Python can; only when it meets
    something it cannot pack (or a library model) does the precise Python walk run.
    """
    try:
        return _PLAIN.pack(value)
    except (TypeError, ValueError, OverflowError):
        return msgpack.packb(to_plain(value, where), use_bin_type=True)


def _pack_default(value: Any) -> Any:
    dumped = _dump_model(value)
    if dumped is None:
        raise TypeError(type(value).__qualname__)
    return dumped


_PLAIN: Final = ThreadPacker(default=_pack_default)


class _Where:
    """Where a value sits in a payload (``content['items'][2]``), spelled out only when an error
    names it: formatting each item's path as the walk went was most of what checking a small
    payload cost, on every message a robot sends."""

    __slots__ = ("key", "parent")

    def __init__(self, parent: str | _Where, key: object) -> None:
        self.parent = parent
        self.key = key

    def __str__(self) -> str:
        return f"{self.parent}[{self.key!r}]"


def _plain(value: Any, where: str | _Where, depth: int, seen: set[int]) -> Any:
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise BoundaryError(f"{where} is an int too large for 64 bits", type_name="int",
                                path=str(where))
        return value
    if depth >= _MAX_DEPTH:
        raise BoundaryError(f"{where} nests deeper than {_MAX_DEPTH} levels",
                            type_name=type(value).__name__, path=str(where))
    if isinstance(value, (list, tuple, dict)):
        if id(value) in seen:
            raise BoundaryError(f"{where} refers back to itself (a cycle)",
                                type_name=type(value).__name__, path=str(where))
        seen = seen | {id(value)}
        if isinstance(value, dict):
            return _plain_dict(value, where, depth, seen)
        return [_plain(item, _Where(where, i), depth + 1, seen) for i, item in enumerate(value)]
    dumped = _dump_model(value)
    if dumped is not None:
        return _plain(dumped, where, depth + 1, seen)
    raise BoundaryError(
        f"{where} is {_describe(value)}, which cannot cross a process boundary; "
        "send plain data (str, int, float, bool, None, bytes, list, dict)",
        type_name=type(value).__qualname__,
        path=str(where),
    )


def _plain_dict(value: dict, where: str | _Where, depth: int, seen: set[int]) -> dict:
    out = {}
    for key, item in value.items():
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            raise BoundaryError(
                f"{where} has a key of type {type(key).__qualname__} ({key!r}); keys must be str "
                "or int",
                type_name=type(key).__qualname__,
                path=str(where),
            )
        out[key] = _plain(item, _Where(where, key), depth + 1, seen)
    return out


def _dump_model(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return to_dict()
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        return model_dump(mode="json")
    return None


def _describe(value: Any) -> str:
    kind = type(value)
    if callable(value) and kind.__name__ in {"function", "method", "builtin_function_or_method",
                                             "lambda"}:
        return "a function"
    article = "an" if kind.__qualname__[:1].lower() in "aeiou" else "a"
    if kind.__module__ == "builtins":
        return f"{article} {kind.__qualname__}"
    return f"{article} {kind.__module__}.{kind.__qualname__}"
