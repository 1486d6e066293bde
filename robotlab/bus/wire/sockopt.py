"""pyzmq's ``Socket.get`` without a new ``SocketOption`` enum on every call.

pyzmq's compiled ``get`` turns its int argument into a ``SocketOption`` member each call
(``SocketOption(option)``, through ``EnumType.__call__``) only to read the option's type from
it. The bus reads ZMQ_EVENTS and ZMQ_RCVMORE several times per message in every process, and
that enum call was about a third of each read. :func:`install` points the compiled module's
global at a dict lookup of the same members, so ``get`` behaves exactly as before (the same
members, ``ValueError`` for an unknown option, which ``get`` already handles), only cheaper.

``get`` then compares the option's type with ``_OptType.bytes``, ``.int64`` and ``.fd``: each
an attribute of an Enum class, which goes through ``EnumType.__getattr__``'s slow attribute
hook (about 850 instructions each, three per read). :func:`install` also gives the compiled
module a plain namespace holding the very same members.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Final

from zmq.constants import SocketOption, _OptType

_MEMBERS: Final[dict[int, SocketOption]] = {int(option): option for option in SocketOption}


def member(option: Any, _get: Callable[[int], SocketOption | None] = _MEMBERS.get) -> SocketOption:
    """``SocketOption(option)`` by dict lookup; unknown options still go to the enum (and raise)."""
    found = _get(option)
    return found if found is not None else SocketOption(option)


def install() -> bool:
    """Point pyzmq's compiled ``get`` at :func:`member`; False (and nothing changed) when this
    pyzmq's backend does not look the enum up as a module global (another version or backend)."""
    try:
        from zmq.backend.cython import _zmq
    except ImportError:  # the CFFI backend (PyPy): its get does not build the enum this way
        return False
    if getattr(_zmq, "SocketOption", None) not in (SocketOption, member):
        return False
    setattr(_zmq, "SocketOption", member)  # noqa: B010  (mypy: the stub says it is a class)
    if getattr(_zmq, "_OptType", None) is _OptType:
        setattr(_zmq, "_OptType", SimpleNamespace(**{m.name: m for m in _OptType}))  # noqa: B010
    return True


INSTALLED = install()
"""Whether the lookup is in place (installed once, when the bus's protocol is imported)."""
