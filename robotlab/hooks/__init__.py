"""Hooks: code that runs before, around and after a robot's work, and the shipped ``Narrator``."""

from __future__ import annotations

from robotlab.hooks.hooks import Hook, HookRegistry, clear_hooks, global_hooks, hooks, on
from robotlab.hooks.narrator import Narrator

__all__ = ["Hook", "HookRegistry", "Narrator", "clear_hooks", "global_hooks", "hooks", "on"]
