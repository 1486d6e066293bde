"""Bad settings told as people fix them: one line per bad field, naming the field, the value it
was given, what it expects and where that value came from (a file, a variable, ``configure``).

pydantic's own report (``2 validation errors for Settings``, a type tag, a link per field) is
written for the programmer of the model, not for the person who mistyped a YAML value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["describe", "expected"]

_EXPECTED = {
    "int_parsing": "a whole number", "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number", "float_type": "a number",
    "bool_parsing": "true or false", "bool_type": "true or false",
    "string_type": "text", "list_type": "a list", "dict_type": "a mapping",
    "model_type": "a mapping", "model_attributes_type": "a mapping",
}
"""What a field expects, by pydantic's error type; other types keep pydantic's own words."""


def expected(error: Mapping[str, Any]) -> str:
    """What the field of one pydantic ``error`` (an item of ``ValidationError.errors()``)
    expects."""
    known = _EXPECTED.get(str(error.get("type")))
    if known is not None:
        return known
    message = str(error.get("msg", "a valid value"))
    return message.removeprefix("Input should be ").removeprefix("Value error, ")


def describe(errors: Sequence[Mapping[str, Any]],
             where: Callable[[tuple[str, ...]], str] | None = None,
             prefix: tuple[str, ...] = ()) -> str:
    """One line per bad field of ``errors`` (``ValidationError.errors()``):
    ``<where>: <field>: got <value>; expected <what>``.

    Args:
        errors: pydantic's errors.
        where: names where the value at a field's path came from (a file, a variable); None
            leaves it out.
        prefix: the path of the model that was validated inside a larger one (``ruby_llm``).
    """
    lines = []
    for error in errors:
        path = (*prefix, *(str(part) for part in error.get("loc", ())))
        field = ".".join(path) or "the settings"
        head = f"{where(path)}: " if where is not None else ""
        lines.append(f"{head}{field}: got {error.get('input')!r}; expected {expected(error)}")
    return "\n".join(lines)
