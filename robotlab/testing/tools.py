"""Small tools for tests and examples."""

from __future__ import annotations

from typing import Any

from robotlab.tools.tool import Tool

__all__ = ["EchoTool"]


class EchoTool(Tool):
    """Returns its ``text`` argument unchanged."""

    description = "Echo the text back."
    parameters = {"type": "object", "properties": {"text": {"type": "string"}},
                  "required": ["text"]}

    def execute(self, **kwargs: Any) -> Any:
        """Return ``text``."""
        return kwargs.get("text", "")
