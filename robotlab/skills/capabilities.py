"""What a skill script may touch: its declared ``Capabilities``, the global ceiling, and their
intersection (the grant a sandbox enforces).

A declaration can only narrow the ceiling, never widen it: a path survives only when it is a
ceiling root or lies beneath one (both expanded against the working directory), network needs
both sides, and the time-out is the smaller of the two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigError

__all__ = ["DEFAULT_TIMEOUT", "TRUST_LEVELS", "Capabilities"]

DEFAULT_TIMEOUT = 60.0
TRUST_LEVELS = ("core", "external")
"""``core`` skills run without confinement (the operator vouches for them); anything else is
``external``."""


def _paths(values: Any, field: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, Iterable) or not all(isinstance(v, str) for v in values):
        raise ConfigError(f"sandbox {field} must be a list of paths, got {values!r}")
    return tuple(values)


def _expand(path: str, base: Path) -> Path:
    return (base / Path(path).expanduser()).resolve()


def _within(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


@dataclass(frozen=True)
class Capabilities:
    """Paths a script may read and write, whether it may use the network, and its time-out."""

    fs_read: tuple[str, ...] = ()
    """Paths the script may read (relative ones against the working directory)."""
    fs_write: tuple[str, ...] = ()
    """Paths the script may write (and read)."""
    network: bool = False
    """Whether the script may open network sockets."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds before the script's whole process group is killed."""
    trust: str = "external"
    """``core`` (run unconfined) or ``external``."""

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> Capabilities:
        """Capabilities from SKILL.md front matter or the ``sandbox:`` settings, normalised.

        A missing or non-positive time-out becomes 60 seconds; an unknown trust becomes
        ``external``.
        """
        values = dict(values or {})
        timeout = values.get("timeout")
        try:
            timeout = float(timeout) if timeout is not None else DEFAULT_TIMEOUT
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"sandbox timeout must be a number of seconds, "
                              f"got {timeout!r}") from exc
        trust = str(values.get("trust") or "external")
        return cls(
            fs_read=_paths(values.get("fs_read"), "fs_read"),
            fs_write=_paths(values.get("fs_write"), "fs_write"),
            network=bool(values.get("network", False)),
            timeout=timeout if timeout > 0 else DEFAULT_TIMEOUT,
            trust=trust if trust in TRUST_LEVELS else "external",
        )

    def within(self, ceiling: Capabilities, cwd: Path | None = None) -> Capabilities:
        """The intersection with ``ceiling``: what the script is actually granted.

        Paths come back absolute. Trust is kept as declared.
        """
        base = (cwd or Path.cwd()).resolve()

        def keep(declared: tuple[str, ...], allowed: tuple[str, ...]) -> tuple[str, ...]:
            roots = [_expand(p, base) for p in allowed]
            return tuple(str(p) for p in (_expand(d, base) for d in declared) if _within(p, roots))

        return Capabilities(
            fs_read=keep(self.fs_read, ceiling.fs_read),
            fs_write=keep(self.fs_write, ceiling.fs_write),
            network=self.network and ceiling.network,
            timeout=min(self.timeout, ceiling.timeout),
            trust=self.trust,
        )
