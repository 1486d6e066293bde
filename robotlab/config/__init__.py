"""Configuration: the global cascade, its typed shape, and a robot's ``RunConfig``.

Every name loads on first use (PEP 562): ``RunConfig`` and ``Settings`` bring pydantic, and a
handler-only member never loads the cascade.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from robotlab.config.cascade import config, configure, deep_merge, reload_config
    from robotlab.config.run_config import RunConfig
    from robotlab.config.settings import Settings

__all__ = ["RunConfig", "Settings", "config", "configure", "deep_merge", "reload_config"]


def __getattr__(name: str) -> Any:
    """Load a public name on first use."""
    if name in ("config", "configure", "deep_merge", "reload_config"):
        from robotlab.config import cascade

        return getattr(cascade, name)
    if name == "RunConfig":
        from robotlab.config.run_config import RunConfig

        return RunConfig
    if name == "Settings":
        from robotlab.config.settings import Settings

        return Settings
    raise AttributeError(f"module 'robotlab.config' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "RunConfig", "Settings"})
