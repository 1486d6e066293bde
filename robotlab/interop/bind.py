"""Where an HTTP server of the crew listens: ``HOST:PORT`` parsed, a bind beyond loopback refused
without an explicit opt-in (the broker's rule, ``robotlab.bus.config.is_loopback``), and the
listening socket opened before the server starts, so a bad address is one line, not a traceback
from inside the server.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from robotlab.bus.config import is_loopback
from robotlab.errors import ConfigError


@dataclass(frozen=True)
class Bind:
    """A host and a TCP port (0: the kernel picks one)."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_bind(text: str) -> Bind:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a :class:`Bind`.

    Raises:
        ConfigError: not of that form, or the port is not 0 to 65535.
    """
    host, _, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{text!r} is not HOST:PORT: give an address such as 127.0.0.1:8765 "
                          "([::1]:8765 for IPv6)")
    return Bind(host, int(port))


def check_exposure(bind: Bind, insecure: bool, what: str, key_option: str | None = None) -> None:
    """Refuse a bind reachable beyond this machine unless ``insecure`` says it was meant.

    A server that checks a key of its own (``key_option``, such as the web console's
    ``--access-key``) passes ``insecure`` true once it has one, and the refusal names it.

    Raises:
        ConfigError: the one line saying why and what to pass instead.
    """
    if not insecure and not is_loopback(f"tcp://{bind}"):
        keyed = (f"pass {key_option} FILE so that only who holds the key gets in, " if key_option
                 else "")
        raise ConfigError(
            f"refusing to serve {what} on {bind}: it is reachable beyond this machine, and whoever "
            f"reaches it can ask every robot on the bus. Bind a loopback address (127.0.0.1), "
            f"{keyed}or pass --insecure on a network you trust (behind a proxy that checks who "
            "asks).")


def listen(bind: Bind) -> socket.socket:
    """A listening TCP socket at ``bind``.

    Raises:
        ConfigError: the host does not resolve, or the address cannot be bound (in use, not
            this machine's, a privileged port).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(bind.host, bind.port,
                                                             type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {bind}: {bind.host!r} does not resolve "
                          f"({exc.strerror})") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {bind}: {exc.strerror or exc}") from exc
    return sock
