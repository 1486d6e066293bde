"""Typed settings of the bus: the broker's knobs and how clients find the broker.

Only entry points (the CLI, robotd, the broker's ``__main__``) read the environment, through
:func:`broker_url`; everything below them receives these objects.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from robotlab.environment import variable
from robotlab.errors import ConfigError

from .wire.schema import NAME_MAX

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_URL = "tcp://127.0.0.1:5555"
ENV_BROKER = "ROBOT_LAB_BROKER"
ENV_KEYS = "ROBOT_LAB_KEYS"
ENV_KEY = "ROBOT_LAB_KEY"


class BrokerConfig:
    """How a broker listens and how it treats its peers.

    Immutable, and checked as it is made; :meth:`replace` makes a changed copy. Equal to another
    with the same fields.

    Raises:
        ConfigError: a value is out of its range, or the options do not fit together.
    """

    # A plain class, not a dataclass: a handler-only robotd imports this, and so never imports
    # dataclasses (nor inspect, dis and ast with it).

    __slots__ = __match_args__ = ("bind", "heartbeat", "liveness", "ack_timeout", "max_handling",
                                  "max_message_bytes", "max_inflight", "dlq_max", "insecure",
                                  "keys_dir", "journal", "journal_max_bytes", "standby",
                                  "state_bind", "peer", "standby_sync", "hold", "key_file",
                                  "bind_timeout", "dlq_max_bytes")

    bind: str
    """ZeroMQ endpoint to bind: tcp://host:port, ipc://path or inproc://name."""
    heartbeat: float
    """Seconds between heartbeats; announced to peers in WELCOME."""
    liveness: int
    """Heartbeats a peer may miss before it stops receiving and is dropped."""
    ack_timeout: float
    """Seconds a delivery may stay unacked before it times out."""
    max_handling: float
    """Seconds any delivery may stay in flight, touched or not; past it the sender is told
    ``timeout`` and the message is dead-lettered. A SEND may ask for less (``max_handling``)."""
    max_message_bytes: int
    """Largest frame accepted; ZeroMQ drops a connection that sends more."""
    max_inflight: int
    """Unacked deliveries per robot instance before new ones are answered ``busy``."""
    dlq_max: int
    """Dead letters kept; the oldest are evicted (and counted) past this."""
    dlq_max_bytes: int | None
    """Bytes the dead letters may hold, bodies and an allowance for each header; the oldest are
    evicted (and counted) past this. None: half of ``journal_max_bytes`` with a journal, so that
    dead letters never leave live sends without room, else 64 MiB."""
    insecure: bool
    """Allow binding beyond loopback without CURVE keys."""
    keys_dir: str | None
    """CURVE keys folder: ``broker.key_secret`` is the broker's key, ``authorized/*.key`` the
    keys it accepts. None: no authentication (loopback, or ``insecure``)."""
    journal: str | None
    """SQLite file that keeps unsettled messages, dead letters and known names across restarts.
    None: all of it lives in memory (the embedded broker's default)."""
    journal_max_bytes: int
    """Message bytes the journal may hold; past it, new sends are answered ``busy``."""
    standby: str | None
    """``primary`` or ``backup`` of a Binary Star pair (None: a broker on its own)."""
    state_bind: str | None
    """Where a standby broker publishes its state for its peer (tcp:// or ipc://)."""
    peer: str | None
    """Where its peer publishes its state."""
    standby_sync: bool
    """One of a standby pair sends a receipt only once its peer holds the journal's record of it
    (False: at once, and a failover may lose the last commits)."""
    hold: float
    """Seconds a known name's messages wait for a member to come back, and a silent member's
    in-flight deliveries wait for it, before they are dead-lettered (0: fail at once)."""
    key_file: str | None
    """The broker's secret key file, when not ``keys_dir/broker.key_secret`` (a systemd
    credential)."""
    bind_timeout: float
    """Seconds to keep trying a bind address that does not exist yet (an interface still coming
    up) before giving up with the temporary-failure code."""

    def __init__(self, bind: str = DEFAULT_URL, heartbeat: float = 1.0, liveness: int = 3,
                 ack_timeout: float = 30.0, max_handling: float = 3600.0,
                 max_message_bytes: int = 16 * 1024 * 1024, max_inflight: int = 64,
                 dlq_max: int = 10_000, insecure: bool = False, keys_dir: str | None = None,
                 journal: str | None = None, journal_max_bytes: int = 256 * 1024 * 1024,
                 standby: str | None = None, state_bind: str | None = None,
                 peer: str | None = None, standby_sync: bool = True, hold: float = 0.0,
                 key_file: str | None = None, bind_timeout: float = 60.0,
                 dlq_max_bytes: int | None = None) -> None:
        set_field = object.__setattr__
        set_field(self, "bind", bind)
        set_field(self, "heartbeat", heartbeat)
        set_field(self, "liveness", liveness)
        set_field(self, "ack_timeout", ack_timeout)
        set_field(self, "max_handling", max_handling)
        set_field(self, "max_message_bytes", max_message_bytes)
        set_field(self, "max_inflight", max_inflight)
        set_field(self, "dlq_max", dlq_max)
        set_field(self, "insecure", insecure)
        set_field(self, "keys_dir", keys_dir)
        set_field(self, "journal", journal)
        set_field(self, "journal_max_bytes", journal_max_bytes)
        set_field(self, "standby", standby)
        set_field(self, "state_bind", state_bind)
        set_field(self, "peer", peer)
        set_field(self, "standby_sync", standby_sync)
        set_field(self, "hold", hold)
        set_field(self, "key_file", key_file)
        set_field(self, "bind_timeout", bind_timeout)
        set_field(self, "dlq_max_bytes", dlq_max_bytes)
        self._check()

    def _check(self) -> None:
        if self.heartbeat <= 0:
            raise ConfigError(f"heartbeat must be positive, got {self.heartbeat}")
        if self.liveness < 1:
            raise ConfigError(f"liveness must be at least 1, got {self.liveness}")
        if self.ack_timeout <= 0:
            raise ConfigError(f"ack timeout must be positive, got {self.ack_timeout}")
        if self.max_handling <= 0:
            raise ConfigError(f"max handling time must be positive, got {self.max_handling}")
        if self.max_message_bytes < 1024:
            raise ConfigError(f"max message bytes must be at least 1024, "
                              f"got {self.max_message_bytes}")
        if self.max_inflight < 1:
            raise ConfigError(f"max in-flight must be at least 1, got {self.max_inflight}")
        self._check_durability()
        if self.key_file and not self.keys_dir:
            raise ConfigError("--key needs --keys DIR (or $ROBOT_LAB_KEYS) for the authorized keys")
        if self.bind_timeout < 0:
            raise ConfigError(f"bind timeout must not be negative, got {self.bind_timeout}")
        check_endpoint(self.bind)

    def _check_durability(self) -> None:
        if self.standby is not None and (self.standby not in ("primary", "backup")
                                         or not self.state_bind or not self.peer):
            raise ConfigError("a standby broker needs --standby primary|backup, --state-bind URL "
                              "and --peer URL")
        if self.hold < 0:
            raise ConfigError(f"hold must be 0 or more seconds, got {self.hold}")
        if self.journal_max_bytes < 1024 * 1024:
            raise ConfigError(f"journal max bytes must be at least 1 MiB, "
                              f"got {self.journal_max_bytes}")
        cap = self.journal_max_bytes if self.journal else float("inf")
        if self.dlq_max_bytes is not None and not 0 < self.dlq_max_bytes < cap:
            raise ConfigError(f"dlq max bytes must be positive and, with a journal, below its "
                              f"max bytes ({self.journal_max_bytes}) to leave live sends room, "
                              f"got {self.dlq_max_bytes}")

    @property
    def expiry(self) -> float:
        """Seconds of silence after which a peer counts as gone."""
        return self.heartbeat * self.liveness

    def replace(self, **changes: Any) -> BrokerConfig:
        """A copy with the fields named in ``changes`` set to their values, checked as a new one is.

        Raises:
            ConfigError: a changed value is out of its range, or no longer fits the others.
            TypeError: a keyword names no field.
        """
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return self.__class__(**fields)

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BrokerConfig) and other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"BrokerConfig({shown})"

    def __reduce__(self) -> tuple[type[BrokerConfig], tuple[object, ...]]:
        return (self.__class__, self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: BrokerConfig is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: BrokerConfig is immutable")


def broker_url(explicit: str | None = None) -> str:
    """The broker address a client should use.

    ``explicit``, else $ROBOT_LAB_BROKER, else the default.

    It may list several brokers, comma-separated (a primary and its backup): the client fails
    over from one to the next.
    """
    url = explicit or variable(ENV_BROKER) or DEFAULT_URL
    for one in url.split(","):
        check_endpoint(one.strip())
    return ",".join(one.strip() for one in url.split(","))


def default_journal(bind: str) -> str:
    """Where ``robotlab broker --bind BIND`` keeps its journal unless told.

    Under systemd, ``broker.db`` in the unit's own $STATE_DIRECTORY. Otherwise in
    $XDG_STATE_HOME/robotlab (~/.local/state/robotlab), named after the bind address
    (``broker-tcp-127.0.0.1-5555.db``): two brokers on one host, a user's and a demo's say,
    never share a journal, and so never lock each other out or take each other's messages.
    """
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    if state:
        return os.path.join(state, "broker.db")
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", bind).strip("-")
    return str(user_state_dir() / f"broker-{slug}.db")


def user_state_dir() -> Path:
    """$XDG_STATE_HOME/robotlab, else ~/.local/state/robotlab."""
    from pathlib import Path  # here: pathlib brings urllib.parse and ipaddress (see below)

    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "robotlab"


def shared_journal() -> Path | None:
    """The journal every broker without ``--journal`` once shared (``broker.db`` in the user's
    state folder), when it is still there: it may hold messages a broker should take back."""
    legacy = user_state_dir() / "broker.db"
    return legacy if not os.environ.get("STATE_DIRECTORY") and legacy.exists() else None


def keys_dir(explicit: str | None = None) -> str | None:
    """The CURVE keys folder a member should use: ``explicit``, else $ROBOT_LAB_KEYS, else None."""
    return explicit or variable(ENV_KEYS) or None


def key_file(explicit: str | None = None) -> str | None:
    """This process's own secret key file: ``explicit``, else $ROBOT_LAB_KEY (systemd units point
    it at the credential they load), else None (``KEYS/<name>.key_secret``)."""
    return explicit or variable(ENV_KEY) or None


ADDRESS_FORMS = "tcp://HOST:PORT, ipc:///path/to/socket or inproc://NAME"
"""What a broker address looks like, as every refusal of one says it."""


def check_endpoint(url: str) -> None:
    """Raise ConfigError unless ``url`` is a tcp://, ipc:// or inproc:// endpoint."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in {"tcp", "ipc", "inproc"} or not url.split("://", 1)[1]:
        raise ConfigError(f"{url!r} is not a broker address: one looks like {ADDRESS_FORMS}")
    if scheme == "tcp" and tcp_host_and_port(url) is None:
        raise ConfigError(f"broker address {url!r} needs a host and a port, e.g. tcp://127.0.0.1:5555")


def tcp_host_and_port(url: str) -> tuple[str, int] | None:
    """The host and port of ``tcp://HOST:PORT`` (HOST a name, an address, ``*``, or ``[v6]``
    bracketed), or None when either is missing or the port is not one.

    Read by hand rather than with urllib.parse, which imports ipaddress: every member checks
    its broker's address, and the two modules are about half a megabyte of each one's memory.
    """
    host, colon, port = url[len("tcp://"):].rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif "[" in host or "]" in host:
        return None
    if not colon or not host or "/" in host or not port.isascii() or not port.isdigit():
        return None
    number = int(port)
    return (host, number) if number <= 65535 else None


def check_endpoints(url: str) -> str:
    """Return ``url`` (one address, or several comma-separated) once each is a broker address.

    Raises:
        ConfigError: one is not (``http://...``, a missing port), naming what one looks like.
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"no broker address given: a broker address looks like {ADDRESS_FORMS}")
    for one in url.split(","):
        check_endpoint(one.strip())
    return url


NAME_FORBIDDEN = re.compile(r"[\s,*\x00-\x1f\x7f]")
"""What a robot name may not hold: white space and control characters (unreadable in ``ps``,
lost in a shell), and ``,`` and ``*``, which separate and match names in a key's list."""


def check_name(name: str, what: str = "robot name") -> str:
    """Return ``name`` once it is a name a member may have on the bus, or that one may send to.

    The rule every entry point shares (``robotd --name``, ``robotlab send --to``, a spawned
    robot's name, :func:`robotlab.bus.connect`): 1 to 128 characters, none of them white
    space, a control character, ``,`` or ``*``.

    Raises:
        ConfigError: the one line saying what is wrong with it (``what`` names the argument).
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{what} is empty: give a name such as 'alice' (no spaces, at most "
                          f"{NAME_MAX} characters)")
    if len(name) > NAME_MAX:
        raise ConfigError(f"{what} {name[:20]!r}... is {len(name)} characters long: "
                          f"at most {NAME_MAX}")
    bad = NAME_FORBIDDEN.search(name)
    if bad is not None:
        raise ConfigError(f"{what} {name!r} has {bad.group()!r} in it: a name has no spaces, "
                          "control characters, ',' or '*' (e.g. 'alice', 'code-reviewer')")
    return name


def is_ipv6(url: str) -> bool:
    """True for a tcp:// endpoint whose host is a bracketed IPv6 address (``tcp://[::1]:5555``)."""
    return url.startswith("tcp://[")


def is_loopback(url: str) -> bool:
    """True when binding ``url`` exposes nothing beyond this machine."""
    if not url.startswith("tcp://"):
        return True
    import ipaddress  # only a binding broker asks

    parsed = tcp_host_and_port(url)
    host = parsed[0].lower() if parsed else ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
