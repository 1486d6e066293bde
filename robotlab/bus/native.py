"""The bus's compiled hot path: which modules are built with mypyc, and when their pure-Python
source runs instead.

Every message at every hop runs the same few modules: the wire protocol, the member's I/O loop
and the broker's routing and settling. ``pip install -e .`` (``make venv``) compiles them with
mypyc (``setup.py``) into C extensions, from the same typed source: there is one implementation,
and the ``.py`` files are both the source of the build and the fallback. A round trip through
the broker then executes about a third fewer instructions (docs/benchmarks.md).

The compiled modules run only when they match their source. Python loads an extension before a
``.py`` of the same name, so an extension older than its source would silently run code that is
no longer there; :func:`choose` (run by ``robotlab.bus`` and ``robotlab.broker`` before they
import any of these) makes every one of them load from its source instead when:

- ``ROBOT_LAB_PURE=1`` is set (to debug with line numbers, patch a function, or fuzz with
  coverage);
- in a source checkout, any of the modules' ``.py`` files is newer than the compiled group (an
  edit since the build: ``make compile`` builds them again; ``make test`` does it first); or a
  module of the group was not compiled. An installed robotlab (a wheel) is not judged by file
  times: pip writes a wheel's files in any order, and its sources came with its extensions.

All of them or none: compiled modules call each other directly in C, so a mix is never run.
"""

from __future__ import annotations

import atexit
import functools
import importlib.machinery
import importlib.util
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType

GROUP = "robotlab.bus._native"
"""The mypyc group: its shared library is the extension module ``robotlab.bus._native__mypyc``."""

MODULES = (
    "robotlab.bus.wire.schema",
    "robotlab.bus.wire.protocol",
    "robotlab.bus.wire.sockopt",
    "robotlab.bus.member.outgoing_frames",
    "robotlab.bus.member.incoming_frames",
    "robotlab.bus.member.tracking",
    "robotlab.bus.member.unconfirmed_replies",
    "robotlab.bus.member.outstanding",
    "robotlab.bus.member.handshake",
    "robotlab.bus.member.reader_seat",
    "robotlab.bus.member.dialer",
    "robotlab.bus.member.socket_pump",
    "robotlab.bus.member.link",
    "robotlab.bus.member.client",
    "robotlab.bus.member.dispatcher",
    "robotlab.bus.wire.plain_data",
    "robotlab.bus.member.message_spans",
    "robotlab.bus.member.message",
    "robotlab.broker.router",
    "robotlab.broker.registry",
    "robotlab.broker.outbox",
    "robotlab.broker.holds",
    "robotlab.broker.journal_contract",
    "robotlab.broker.journal_changes",
    "robotlab.broker.journal",
    "robotlab.broker.records",
    "robotlab.broker.traffic",
    "robotlab.broker.replies",
    "robotlab.broker.deliveries",
    "robotlab.broker.commands",
    "robotlab.broker.broker",
)
"""The compiled modules, in their import names (``setup.py`` builds exactly these)."""

log = logging.getLogger("robotlab.bus")
_chosen: str | None = None
_unannounced: list[str] = []


def choose() -> str:
    """Decide once per process whether the compiled modules run: ``"compiled"``, ``"pure"``
    (asked for, or stale: see the module docstring) or ``"source"`` (never compiled)."""
    global _chosen
    if _chosen is None:
        _chosen = _decide(_pure_asked())
        if _chosen == "pure":
            sys.meta_path.insert(0, SourceFirst(MODULES))
    return _chosen


def _pure_asked() -> bool:
    """True when ``ROBOT_LAB_PURE`` (or its old name) is set to anything but ``0``."""
    # Imported here: setup.py runs this file on its own to read MODULES, where robotlab may not
    # be importable. The deprecation line waits for logging, as the stale-build one does.
    from robotlab.environment import variable

    return (variable("ROBOT_LAB_PURE", warn=announce) or "") not in ("", "0")


def _decide(asked_pure: bool) -> str:
    built = _compiled_files()
    if not built:
        return "source"
    if asked_pure:
        return "pure"
    stale = stale_sources(built, by_time=in_checkout())
    if stale:
        announce(f"robotlab: {stale[0]} changed since the bus was compiled; running the "
                 "pure-Python bus (`make compile` builds it again)")
        return "pure"
    return "compiled"


def announce(warning: str) -> None:
    """Log ``warning`` now if logging is set up, else once it is (:func:`announce_pending`).

    The choice is made while an entry point imports its modules, before it sets logging up from
    its options: logged then, the line would come out as plain text ahead of ``--log-format
    json``'s objects. A process that never sets logging up gets it at exit.
    """
    if logging.getLogger().handlers:
        log.warning("%s", warning)
        return
    if not _unannounced:
        atexit.register(announce_pending)
    _unannounced.append(warning)


def announce_pending() -> None:
    """Log the warnings held until logging was set up (``configure_logging`` calls it)."""
    while _unannounced:
        log.warning("%s", _unannounced.pop(0))


def _compiled_files() -> dict[str, str]:
    """Module name -> its extension file, for the group library and each compiled module."""
    # os.path, not pathlib: every process that touches the bus runs this, and pathlib brings
    # urllib.parse and ipaddress with it, most of a megabyte in each of hundreds of members
    found: dict[str, str] = {}
    for name in (f"{GROUP}__mypyc", *MODULES):
        spec = _find(name, importlib.machinery.ExtensionFileLoader,
                     importlib.machinery.EXTENSION_SUFFIXES)
        if spec is not None and spec.origin:
            found[name] = spec.origin
    return found


def in_checkout() -> bool:
    """True when robotlab runs from a source checkout (``pyproject.toml`` beside its package),
    where a source can be edited after ``make compile``; False when it was installed, its
    sources and extensions from one build (pip writes them in any order, so their times say
    nothing of which came first)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.isfile(os.path.join(os.path.dirname(package), "pyproject.toml"))


def stale_sources(built: Mapping[str, str | os.PathLike[str]], by_time: bool = True) -> list[str]:
    """The source files never compiled into the group and, ``by_time``, those newer than it
    (empty: none)."""
    library = built.get(f"{GROUP}__mypyc")
    if library is None:
        return [f"the group library {GROUP}__mypyc"]
    newest = os.stat(library).st_mtime
    stale = []
    for name in MODULES:
        source = _find(name, importlib.machinery.SourceFileLoader,
                       importlib.machinery.SOURCE_SUFFIXES)
        if source is None or not source.origin:
            continue
        if name not in built or by_time and os.stat(source.origin).st_mtime > newest:
            stale.append(source.origin)
    return stale


def _find(name: str, loader: type,
          suffixes: Sequence[str]) -> importlib.machinery.ModuleSpec | None:
    """The spec of ``name`` from a file of one kind only, in its package's folders."""
    for folder in _package_folders(name.rpartition(".")[0]):
        # One finder per folder and kind: each lists its folder once, not once per module.
        finder = _finders.get((folder, loader))
        if finder is None:
            finder = _finders[(folder, loader)] = importlib.machinery.FileFinder(
                folder, (loader, list(suffixes)))
        spec = finder.find_spec(name)
        if spec is not None:
            return spec
    return None


_finders: dict[tuple[str, type], importlib.machinery.FileFinder] = {}


@functools.cache
def _package_folders(package: str) -> tuple[str, ...]:
    """Where ``package`` is, without importing it (its ``__init__`` may import the modules)."""
    loaded: ModuleType | None = sys.modules.get(package)
    if loaded is not None and hasattr(loaded, "__path__"):
        return tuple(loaded.__path__)
    spec = importlib.util.find_spec(package)
    return tuple(spec.submodule_search_locations or []) if spec else ()


class SourceFirst:
    """A meta path finder that loads the listed modules from their ``.py`` source."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = frozenset(names)

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        """The source spec of a listed module; None (ask the next finder) for any other."""
        if name not in self.names:
            return None
        return _find(name, importlib.machinery.SourceFileLoader,
                     importlib.machinery.SOURCE_SUFFIXES)
