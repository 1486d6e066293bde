"""The chainable ``with_*`` methods of a robot (Ruby's delegated chat methods).

Each one goes through ``Robot.update`` and returns the robot. Only methods with a real effect
exist; there is no ``with_top_p``: use ``with_params(top_p=...)``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChatMethods"]


class ChatMethods:
    """Mixin for ``Robot``: ``with_instructions``, ``with_model``, ``with_temperature``, ..."""

    def update(self, **changes: Any) -> Any:
        """Implemented by ``Robot``."""
        raise NotImplementedError

    def with_instructions(self, instructions: str) -> Any:
        """Set the inline system prompt."""
        return self.update(system_prompt=instructions)

    def with_model(self, model: str, provider: str | None = None) -> Any:
        """Switch model (and provider, when given)."""
        return self.update(model=model, provider=provider)

    def with_temperature(self, temperature: float) -> Any:
        """Set the sampling temperature."""
        return self.update(temperature=temperature)

    def with_params(self, **params: Any) -> Any:
        """Set request parameters: ``top_p``, ``top_k``, ``max_tokens``, penalties, ``stop``."""
        return self.update(**params)

    def with_template(self, template: str, **context: Any) -> Any:
        """Switch to another template, rendered with ``context``."""
        return self.update(template=template, context=context)

    def with_tools(self, *tools: Any) -> Any:
        """Attach more local tools."""
        return self.update(local_tools=[*getattr(self, "local_tools", []), *tools])

    def with_tool(self, tool: Any) -> Any:
        """Attach one more local tool."""
        return self.with_tools(tool)
