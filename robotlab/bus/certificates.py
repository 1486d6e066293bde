"""CURVE key files: what a certificate holds (its public and secret keys, the robot names and
roles its metadata grants) and the broker's folder of authorized keys.

The layout both the broker and ``robotlab keys`` read is in :mod:`robotlab.bus.keys` and
docs/broker.md ("Security").
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from robotlab.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

ANY_NAME = "*"
BROKER_KEY = "broker"
AUTHORIZED = "authorized"
ROLE_ROBOT = "robot"
ROLE_ADMIN = "admin"
ROLES = (ROLE_ROBOT, ROLE_ADMIN)
"""A robot key may HELLO as its names and send; an admin key may also use ps, dlq and stats."""
_ROBOTS_LINE = re.compile(r'^\s+robots\s*=\s*"?([^"\n]*)"?\s*$', re.MULTILINE)
_ROLES_LINE = re.compile(r'^\s+roles\s*=\s*"?([^"\n]*)"?\s*$', re.MULTILINE)

_PUBLIC_LINE = re.compile(r'^\s+public-key\s*=\s*"([^"]{40})"', re.MULTILINE)


def certificate_exists(path: Path) -> bool:
    """True when ``path`` is a file.

    Raises:
        ConfigError: a folder on its way is closed to this user (a credentials folder systemd
            did not open to it): the message names the file and the fix.
    """
    try:
        return path.is_file()
    except PermissionError as exc:
        raise ConfigError(_unreadable(path, exc)) from exc


def read_certificate(path: Path) -> tuple[bytes, bytes | None]:
    """The (public, secret) keys of a certificate file; secret is None in a public file.

    Raises:
        ConfigError: the file is missing, unreadable, or not a CURVE certificate; the message
            names the file and the fix.
    """
    if not certificate_exists(path):
        raise ConfigError(f"no CURVE key at {path}; make one with `robotlab keys new`")
    import zmq.auth  # here: only a keyed process reads a certificate; the rest skip glob and z85

    try:
        return zmq.auth.load_certificate(path)
    except PermissionError as exc:
        raise ConfigError(_unreadable(path, exc)) from exc
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{path} is not a CURVE certificate: {exc}") from exc


class Grant:
    """What one authorized key may do: the robot names it may use and its roles, and whose it is.

    Immutable; equal to another with the same fields.
    """

    # A plain class, not a dataclass: a handler-only robotd imports this, and so never imports
    # dataclasses (nor inspect, dis and ast with it).

    __slots__ = __match_args__ = ("robots", "roles", "owner")

    robots: frozenset[str]
    roles: frozenset[str]
    owner: str
    """The key's file name in ``authorized/`` (``bob.key`` is bob's): how logs name it."""

    def __init__(self, robots: frozenset[str], roles: frozenset[str], owner: str = "") -> None:
        object.__setattr__(self, "robots", robots)
        object.__setattr__(self, "roles", roles)
        object.__setattr__(self, "owner", owner)

    @property
    def admin(self) -> bool:
        """True for a key that may use the admin commands."""
        return ROLE_ADMIN in self.roles

    def _fields(self) -> tuple[frozenset[str], frozenset[str], str]:
        return (self.robots, self.roles, self.owner)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Grant) and other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Grant(robots={self.robots!r}, roles={self.roles!r}, owner={self.owner!r})"

    def __reduce__(self) -> tuple[type[Grant], tuple[object, ...]]:
        return (self.__class__, self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: Grant is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: Grant is immutable")


def _metadata_list(pattern: re.Pattern[str], text: str) -> frozenset[str]:
    match = pattern.search(text)
    if match is None:
        return frozenset()
    return frozenset(n.strip() for n in match.group(1).split(",") if n.strip())


def key_robots(path: str | os.PathLike[str]) -> frozenset[str]:
    """The robot names the certificate at ``path`` may use (empty when it names none)."""
    return _metadata_list(_ROBOTS_LINE, _read_key_text(path))


def key_roles(path: str | os.PathLike[str]) -> frozenset[str]:
    """The roles of the certificate at ``path``; a key that names none is a robot key."""
    return _metadata_list(_ROLES_LINE, _read_key_text(path)) or frozenset({ROLE_ROBOT})


def authorized_keys(folder: str | os.PathLike[str]) -> dict[str, Grant]:
    """Map each authorized public key (z85 text, as ZAP reports it in User-Id) to its grant.

    The robot names and roles come from the authorized public file's metadata;
    ``robotlab keys new`` writes them into both files. The owner is the file's name.

    Raises:
        ConfigError: a file there is unreadable or not a CURVE public key.
    """
    from pathlib import Path  # only a keyed broker reads the folder (see robotlab.bus.config)

    table: dict[str, Grant] = {}
    for path in sorted((Path(folder) / AUTHORIZED).glob("*.key")):
        match = _PUBLIC_LINE.search(_read_key_text(path))
        if match is None:
            raise ConfigError(f"{path} is not a CURVE public key file")
        table[match.group(1)] = Grant(key_robots(path), key_roles(path), path.stem)
    return table


def _read_key_text(path: str | os.PathLike[str]) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except PermissionError as exc:
        raise ConfigError(_unreadable(path, exc)) from exc


def _unreadable(path: str | os.PathLike[str], exc: OSError) -> str:
    return (f"cannot read the key {path} ({exc.strerror}) as uid {os.getuid()}: make it readable "
            "by this service's user (chown it; mode 0600 for a secret, 0644 for a public key), or "
            "under systemd load a secret with LoadCredential= (see deploy/README.md)")


def allows(robots: frozenset[str], name: str) -> bool:
    """True when a key with these robot names may HELLO as ``name``.

    A name may be a shell pattern (``bob-*``): a parent's key that lists the names of the
    children it spawns, which join with that key (docs/broker.md, "Keys of spawned robots").
    """
    if ANY_NAME in robots or name in robots:
        return True
    import fnmatch  # only a name a pattern lists gets here

    return any(fnmatch.fnmatchcase(name, pattern) for pattern in robots)
