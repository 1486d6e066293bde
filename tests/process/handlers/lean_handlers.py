"""A handler module that imports nothing a handler-only robotd would not import anyway: what
its handler sees of the process's imports is the robotd's own (``handlers.py`` brings
robotlab.tools, and inspect and dataclasses with it)."""

from __future__ import annotations

import sys
from typing import Any


def loaded(message: Any) -> list[str]:
    """Of the module names in the content, those this process has imported."""
    return [name for name in message.content if name in sys.modules]
