"""Configuration: the global cascade, its typed shape, and a robot's ``RunConfig``.

The cascade's functions are cheap and bound at once; ``RunConfig`` and ``Settings`` (pydantic)
load on first use, so ``import robotlab`` stays light (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from robotlab.config.cascade import config, configure, deep_merge, reload_config

if TYPE_CHECKING:
    from robotlab.config.run_config import RunConfig
    from robotlab.config.settings import Settings

__all__ = ["RunConfig", "Settings", "config", "configure", "deep_merge", "reload_config"]


def __getattr__(name: str) -> Any:
    """Load ``RunConfig`` or ``Settings`` on first use."""
    if name == "RunConfig":
        from robotlab.config.run_config import RunConfig

        return RunConfig
    if name == "Settings":
        from robotlab.config.settings import Settings

        return Settings
    raise AttributeError(f"module 'robotlab.config' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "RunConfig", "Settings"})
