"""The chainable ``with_*`` methods of a robot (Ruby's delegated chat methods).

Each one returns the robot. Model settings go through ``Robot.update``; the schema, thinking
and headers live in the robot's ``ChatExtras`` (``robotlab/robot/structured.py``) and join every
request. Only methods with a real effect exist; there is no ``with_top_p``: use
``with_params(top_p=...)``.
"""

from __future__ import annotations

from typing import Any

from robotlab.config.model_settings import ROUTE_FIELDS
from robotlab.errors import ConfigError
from robotlab.robot.structured import ChatExtras, StructuredOutput

__all__ = ["ChatMethods"]

_EFFORTS = ("low", "medium", "high")


class ChatMethods:
    """Mixin for ``Robot``: ``with_instructions``, ``with_model``, ``with_temperature``, ..."""

    _chat_extras: ChatExtras
    """The schema, thinking settings and headers sent with every request (made by ``Robot``)."""

    def update(self, **changes: Any) -> Any:
        """Implemented by ``Robot``."""
        raise NotImplementedError

    def with_schema(self, schema: Any) -> Any:
        """Ask for JSON matching ``schema``.

        ``schema`` is a pydantic model class or a JSON schema dict; None clears it.

        The final reply is validated into ``result.parsed``; one failure is sent back with the
        error, a second raises ``InferenceError``.

        Raises:
            ConfigError: ``schema`` is neither, or not a valid JSON schema.
        """
        self._chat_extras.structured = None if schema is None else StructuredOutput(schema)
        return self

    def with_thinking(self, effort: str | None = None, budget: int | None = None) -> Any:
        """Ask the model to reason first: ``effort`` (low, medium, high) or a token ``budget``.

        Passed through litellm as ``reasoning_effort`` or ``thinking``; with neither, thinking
        is switched off again.

        Raises:
            ConfigError: an unknown effort, or a budget that is not a positive integer.
        """
        if effort is not None and effort not in _EFFORTS:
            raise ConfigError(f"with_thinking effort must be one of {', '.join(_EFFORTS)}, "
                              f"got {effort!r}")
        if budget is not None and (not isinstance(budget, int) or budget <= 0):
            raise ConfigError(f"with_thinking budget must be a positive number of tokens, "
                              f"got {budget!r}")
        thinking: dict[str, Any] = {}
        if effort is not None:
            thinking["reasoning_effort"] = effort
        if budget is not None:
            thinking["thinking"] = {"type": "enabled", "budget_tokens": budget}
        self._chat_extras.thinking = thinking
        return self

    def with_headers(self, headers: dict[str, str] | None = None, **more: str) -> Any:
        """Send extra HTTP headers with every request, merged with earlier ones.

        Keyword names have ``_`` written as ``-``: ``with_headers(X_Trace_Id="7")`` sends
        ``X-Trace-Id: 7``.
        """
        self._chat_extras.headers.update({str(k): str(v) for k, v in (headers or {}).items()})
        self._chat_extras.headers.update({k.replace("_", "-"): str(v) for k, v in more.items()})
        return self

    def with_context(self, **connection: Any) -> Any:
        """Where this robot's calls go: ``provider``, ``api_base``, ``api_key``, ``model``
        (Ruby's per-chat ``RubyLLM::Context``).

        Raises:
            TypeError: a key that is not a connection setting.
        """
        unknown = sorted(set(connection) - set(ROUTE_FIELDS))
        if unknown:
            raise TypeError(f"with_context takes {', '.join(ROUTE_FIELDS)}; "
                            f"not {', '.join(unknown)}")
        return self.update(**connection)

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
