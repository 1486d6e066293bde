"""Structured output and the other per-robot chat extras: a schema, thinking, headers.

``robot.with_schema(Model)`` (a pydantic model class) or ``with_schema({...})`` (a JSON schema)
asks the provider for JSON matching it (litellm's ``response_format`` with a ``json_schema``)
and validates the final reply: a pydantic model gives an instance, a JSON schema the parsed
value, in ``result.parsed``. A reply that does not validate is sent back once with the
validation error; a second failure raises ``InferenceError``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from robotlab.errors import ConfigError, InferenceError

__all__ = ["RETRY_PROMPT", "ChatExtras", "StructuredOutput"]

RETRY_PROMPT = ("Your reply did not match the required JSON schema: {error}\n"
                "Answer again with only a JSON value that matches the schema.")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def _is_model_class(schema: Any) -> bool:
    return (isinstance(schema, type) and hasattr(schema, "model_json_schema")
            and hasattr(schema, "model_validate"))


@dataclass(frozen=True)
class StructuredOutput:
    """A schema a run's final reply must match."""

    schema: Any
    """A pydantic model class, or a JSON schema dict."""

    def __post_init__(self) -> None:
        if not _is_model_class(self.schema) and not isinstance(self.schema, dict):
            raise ConfigError(f"with_schema takes a pydantic model class or a JSON schema dict, "
                              f"not {type(self.schema).__name__}")
        if isinstance(self.schema, dict):
            import jsonschema

            try:
                jsonschema.validators.validator_for(self.schema).check_schema(self.schema)
            except jsonschema.SchemaError as exc:
                raise ConfigError(f"with_schema: not a valid JSON schema: {exc.message}") from exc

    def response_format(self) -> dict[str, Any]:
        """litellm's ``response_format`` for this schema."""
        if _is_model_class(self.schema):
            name, body = self.schema.__name__, self.schema.model_json_schema()
        else:
            name, body = str(self.schema.get("title") or "response"), self.schema
        safe_name = re.sub(r"[^A-Za-z0-9_-]", "_", name)
        return {"type": "json_schema", "json_schema": {"name": safe_name, "schema": body}}

    def parse(self, text: str | None) -> Any:
        """The reply validated against the schema.

        Raises:
            ValueError: the reply is not JSON or does not match; the message says why.
        """
        raw = (text or "").strip()
        fenced = _FENCE.match(raw)
        raw = fenced.group(1) if fenced else raw
        if _is_model_class(self.schema):
            from pydantic import ValidationError

            try:
                return self.schema.model_validate_json(raw)
            except ValidationError as exc:
                raise ValueError(" ".join(str(exc).split())) from exc
        import jsonschema

        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from exc
        try:
            jsonschema.validate(value, self.schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            raise ValueError(f"{exc.message}" + (f" (at {where})" if where else "")) from exc
        return value


def invalid_twice(error: str) -> InferenceError:
    """The error when a retried reply still fails validation."""
    return InferenceError(f"the reply did not match the schema after one retry: {error}")


@dataclass
class ChatExtras:
    """The robot's schema, thinking settings and extra HTTP headers (empty by default)."""

    structured: StructuredOutput | None = None
    thinking: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        """What these extras add to every request's parameters."""
        params: dict[str, Any] = dict(self.thinking)
        if self.structured is not None:
            params["response_format"] = self.structured.response_format()
        if self.headers:
            params["extra_headers"] = dict(self.headers)
        return params
