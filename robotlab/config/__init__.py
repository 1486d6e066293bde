"""Configuration: the global cascade, its typed shape, and a robot's ``RunConfig``."""

from __future__ import annotations

from robotlab.config.cascade import config, configure, deep_merge, reload_config
from robotlab.config.run_config import RunConfig
from robotlab.config.settings import Settings

__all__ = ["RunConfig", "Settings", "config", "configure", "deep_merge", "reload_config"]
