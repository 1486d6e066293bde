"""CURVE keys of the bus.

Make them, list them, load a client's, read which robot names a key may use.

Layout of a keys folder (see docs/broker.md, "Security")::

    broker.key             the broker's public key (clients need it)
    broker.key_secret      the broker's secret key (only the broker reads it)
    NAME.key, NAME.key_secret
                           a member's key pair; its metadata says which robot names it may use
    authorized/NAME.key    the public keys the broker accepts

A key's robot names are the ``robots`` metadata of its certificate: ``robots = "bob,alice"``,
or ``"*"`` for any name; its ``roles`` metadata is ``robot`` (the default) or ``robot,admin``.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import zmq

from robotlab.errors import ConfigError

from .certificates import (
    AUTHORIZED,
    BROKER_KEY,
    ROLE_ROBOT,
    ROLES,
    key_robots,
    key_roles,
    read_certificate,
)
from .config import key_file as key_file_of_process
from .config import keys_dir

if TYPE_CHECKING:
    from pathlib import Path

CLIENT_KEY = "robotlab"
"""The key a member without a key of its own name uses: the CLI's (``robotlab.key_secret``)."""

_KEY_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class KeyConfig:
    """A client's CURVE key pair and the broker's public key (all z85 bytes).

    Immutable; equal to another with the same keys.
    """

    # A plain class, not a dataclass: a handler-only robotd imports this, and so never imports
    # dataclasses (nor inspect, dis and ast with it).

    __slots__ = __match_args__ = ("public", "secret", "server")

    public: bytes
    secret: bytes
    server: bytes

    def __init__(self, public: bytes, secret: bytes, server: bytes) -> None:
        object.__setattr__(self, "public", public)
        object.__setattr__(self, "secret", secret)
        object.__setattr__(self, "server", server)

    def _fields(self) -> tuple[bytes, bytes, bytes]:
        return (self.public, self.secret, self.server)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeyConfig) and other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"KeyConfig(public={self.public!r}, secret={self.secret!r}, server={self.server!r})"

    def __reduce__(self) -> tuple[type[KeyConfig], tuple[object, ...]]:
        return (self.__class__, self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: KeyConfig is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: KeyConfig is immutable")

    @classmethod
    def load(cls, keys_dir: str | os.PathLike[str], name: str,
             key_file: str | os.PathLike[str] | None = None) -> KeyConfig:
        """Read ``key_file`` (default ``keys_dir/NAME.key_secret``) and ``keys_dir/broker.key``.

        Raises:
            ConfigError: a file is missing or is not a CURVE certificate.
        """
        from pathlib import Path  # keyed members only (see robotlab.bus.config)

        folder = Path(keys_dir)
        secret_file = Path(key_file) if key_file else folder / f"{name}.key_secret"
        public, secret = read_certificate(secret_file)
        if secret is None:
            raise ConfigError(f"{secret_file} holds no secret key; give the .key_secret file")
        server, _ = read_certificate(folder / f"{BROKER_KEY}.key")
        return cls(public=public, secret=secret, server=server)

    @classmethod
    def find(cls, keys_dir: str | os.PathLike[str], name: str,
             key_file: str | os.PathLike[str] | None = None) -> KeyConfig:
        """Like :meth:`load`, but a member with no key of its own name uses the folder's client
        key, ``robotlab.key_secret`` (the CLI's), when there is one.

        Raises:
            ConfigError: neither key exists, naming both files and how to make one.
        """
        from pathlib import Path  # keyed members only (see robotlab.bus.config)

        folder = Path(keys_dir)
        if key_file is None and not (folder / f"{name}.key_secret").is_file():
            if not (folder / f"{CLIENT_KEY}.key_secret").is_file():
                raise ConfigError(f"no CURVE key for {name!r} in {folder} (looked for "
                                  f"{name}.key_secret and {CLIENT_KEY}.key_secret); make one with "
                                  f"`robotlab keys new {name} --robot {name}`")
            name = CLIENT_KEY
        return cls.load(folder, name, key_file)

    def to_plain(self) -> dict[str, str]:
        """The three keys as z85 text, to hand to a spawned child (never written to disk)."""
        return {"public": self.public.decode(), "secret": self.secret.decode(),
                "server": self.server.decode()}

    @classmethod
    def from_plain(cls, data: dict[str, str]) -> KeyConfig:
        """The inverse of :meth:`to_plain`."""
        return cls(public=data["public"].encode(), secret=data["secret"].encode(),
                   server=data["server"].encode())

    def apply(self, socket: zmq.Socket) -> None:
        """Make ``socket`` a CURVE client of the broker (call before connect)."""
        socket.curve_secretkey = self.secret
        socket.curve_publickey = self.public
        socket.curve_serverkey = self.server


def client_keys(name: str, keys_folder: str | None = None,
                key_file: str | None = None) -> KeyConfig | None:
    """The keys a member named ``name`` joins with: the one rule every client follows.

    The folder is ``keys_folder``, else ``$ROBOT_LAB_KEYS``; without either, None (no CURVE).
    In it, ``key_file`` if given, else ``NAME.key_secret``, else ``$ROBOT_LAB_KEY`` (this process's
    own key: the credential a systemd unit loads, so a robot built inside a robotd finds it),
    else ``robotlab.key_secret``.

    Raises:
        ConfigError: a key file is given without a folder, or no key is found in the folder.
    """
    folder = keys_dir(keys_folder)
    if folder is None:
        if key_file:
            raise ConfigError("a key file needs its keys folder (--keys DIR or $ROBOT_LAB_KEYS) "
                              "for the broker's public key")
        return None
    if key_file is None and not os.path.isfile(os.path.join(folder, f"{name}.key_secret")):
        key_file = key_file_of_process()
    return KeyConfig.find(folder, name, key_file)


def new_key(keys_dir: str | os.PathLike[str], name: str, robots: list[str], authorize: bool = True,
            roles: list[str] | None = None) -> tuple[Path, Path]:
    """Write ``NAME.key`` and ``NAME.key_secret`` (mode 0600) into ``keys_dir``; return both paths.

    Args:
        keys_dir: the keys folder (created if missing).
        name: the key's file name; ``broker`` makes the broker's own key.
        robots: robot names this key may HELLO as (``["*"]`` for any).
        authorize: also copy the public key to ``authorized/`` so a broker reading this
            folder accepts it (never done for the broker's own key).
        roles: ``robot`` (the default: HELLO as ``robots`` and send) and/or ``admin`` (also
            ps, stats and the dead-letter queue).

    Raises:
        ConfigError: a bad name, or a key of that name already exists.
    """
    if not _KEY_NAME.match(name):
        raise ConfigError(f"key name {name!r} may hold only letters, digits, '_', '-' and '.'")
    from pathlib import Path  # `robotlab keys` only (see robotlab.bus.config)

    folder = Path(keys_dir)
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / f"{name}.key_secret").exists():
        raise ConfigError(f"{folder / name}.key_secret exists; remove it first to replace the key")
    roles = list(roles or [ROLE_ROBOT])
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise ConfigError(f"unknown role {unknown[0]!r}; a key's roles are {' and '.join(ROLES)}")
    # imported here, as zmq.auth: only `robotlab keys new` makes keys, and every member imports
    # this module
    import shutil

    import zmq.auth

    old_umask = os.umask(0o077)  # the secret file must never exist with wider permissions
    try:
        metadata = {"robots": f'"{",".join(robots)}"', "roles": f'"{",".join(roles)}"'}
        public, secret = zmq.auth.create_certificates(folder, name, metadata=metadata)
    finally:
        os.umask(old_umask)
    # pyzmq writes metadata into the secret file only; the broker reads the public one.
    lines = "".join(f"    {key} = {value}\n" for key, value in metadata.items())
    text = Path(public).read_text(encoding="utf-8")
    Path(public).write_text(text.replace("metadata\n", f"metadata\n{lines}", 1), encoding="utf-8")
    os.chmod(secret, 0o600)
    os.chmod(public, 0o644)
    if authorize and name != BROKER_KEY:
        (folder / AUTHORIZED).mkdir(exist_ok=True)
        shutil.copyfile(public, folder / AUTHORIZED / f"{name}.key")
    return Path(public), Path(secret)


def list_keys(keys_dir: str | os.PathLike[str]) -> list[dict[str, str]]:
    """One row per key in ``keys_dir``.

    Each pair here, and each authorized key whose secret is elsewhere.

    Columns: name, robot names, whether the broker accepts it, and where its secret is
    (``here``, or ``elsewhere`` for a robot on another host whose public key was copied in).
    """
    from pathlib import Path  # `robotlab keys` only (see robotlab.bus.config)

    folder = Path(keys_dir)
    rows = {}
    for secret in sorted(folder.glob("*.key_secret")):
        name = secret.name[: -len(".key_secret")]
        known = (folder / AUTHORIZED / f"{name}.key").is_file()
        authorized = "broker" if name == BROKER_KEY else ("yes" if known else "no")
        roles = "" if name == BROKER_KEY else ",".join(sorted(key_roles(secret)))
        rows[name] = {"name": name, "robots": ",".join(sorted(key_robots(secret))), "roles": roles,
                      "authorized": authorized, "secret": "here"}
    for public in sorted((folder / AUTHORIZED).glob("*.key")):
        if public.stem not in rows:
            rows[public.stem] = {"name": public.stem,
                                 "robots": ",".join(sorted(key_robots(public))),
                                 "roles": ",".join(sorted(key_roles(public))), "authorized": "yes",
                                 "secret": "elsewhere"}
    return sorted(rows.values(), key=lambda row: row["name"])
