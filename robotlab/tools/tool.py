"""Tools a robot can offer its model: the ``Tool`` base class, ``@tool`` and ``Tool.create``.

Three ways to make one, all giving a ``Tool`` with a ``name``, a ``description``, a JSON-schema
``parameters`` object and ``execute(**kwargs)``:

- subclass ``Tool`` and set the three class attributes;
- decorate a typed, documented function with ``@robotlab.tool``;
- ``Tool.create(name=, description=, parameters=<json schema>, handler=callable(args_dict))``.

Nothing is registered anywhere: a robot gets its tools as ``local_tools=[...]``.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["Tool", "tool", "tool_name_of"]

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    set: "array",
    dict: "object",
}


def tool_name_of(class_name: str) -> str:
    """Derive a tool name from a class name: ``CalculatorTool`` gives ``calculator``."""
    base = class_name[:-4] if class_name.endswith("Tool") and class_name != "Tool" else class_name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()


class Tool:
    """A tool the model can call.

    Subclasses set ``name`` (default: derived from the class name), ``description`` and
    ``parameters`` (a JSON-schema object), and implement ``execute(**kwargs)``.

    ``raise_on_error = True`` makes a failure propagate out of ``Robot.run`` instead of being
    returned to the model as ``Error (<name>): <message>``. As in the Ruby original, the flag is
    **not inherited**: ``raises_on_error()`` reads only the class's own setting.

    ``side_effects = True`` declares that the tool changes the world: each call runs with an
    idempotency key (``robotlab.idempotency_key()``, see :mod:`robotlab.tools.effects`).

    Attributes:
        robot: the robot running the tool (set by the robot before each call).
        mcp: the name of the MCP server the tool comes from, or None for local tools.
    """

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    raise_on_error: bool = False
    side_effects: bool = False
    mcp: str | None = None

    def __init__(self) -> None:
        if not self.name:
            self.name = tool_name_of(type(self).__name__)
        self.robot: Any = None

    @classmethod
    def raises_on_error(cls) -> bool:
        """The class's own ``raise_on_error`` flag (never a parent's)."""
        return bool(cls.__dict__.get("raise_on_error", False))

    # ``*args`` too, so a subclass may declare the parameters it takes (mypy accepts any
    # override of a ``*args: Any, **kwargs: Any`` method); the model only passes keywords.
    def execute(self, *args: Any, **kwargs: Any) -> Any:
        """Run the tool with the model's arguments; the return value goes back to the model."""
        raise NotImplementedError(f"{type(self).__name__}.execute is not implemented")

    def call(self, arguments: dict[str, Any]) -> Any:
        """Run ``execute`` with a dict of arguments."""
        return self.execute(**arguments)

    def is_mcp(self) -> bool:
        """True when the tool comes from an MCP server."""
        return self.mcp is not None

    def to_json_schema(self) -> dict[str, Any]:
        """The OpenAI-format tool schema sent to the provider."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description,
                         "parameters": self.parameters},
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain data describing the tool."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters,
                "mcp": self.mcp}

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"

    @classmethod
    def create(
        cls,
        name: str,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        handler: Callable[[dict[str, Any]], Any] | None = None,
        *,
        mcp: str | None = None,
        robot: Any = None,
        side_effects: bool = False,
    ) -> Tool:
        """Build a tool from a JSON schema and a handler taking the arguments as one dict.

        Properties without a ``type`` become strings; ``required`` is kept as given.
        """
        schema = _normalise_schema(parameters or {})
        built = _HandlerTool(name, description or "", schema, handler, mcp=mcp, robot=robot)
        built.side_effects = side_effects
        return built


class _HandlerTool(Tool):
    """A tool whose body is a callable taking the argument dict (``Tool.create``)."""

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any],
        handler: Callable[[dict[str, Any]], Any] | None,
        *,
        mcp: str | None = None,
        robot: Any = None,
        raise_on_error: bool = False,
    ) -> None:
        self.name = name
        super().__init__()
        self.description = description
        self.parameters = parameters
        self.handler = handler
        self.mcp = mcp
        self.robot = robot
        self._raise_on_error = raise_on_error

    def raises_on_error(self) -> bool:  # type: ignore[override]
        """Whether this tool's failures propagate (set per instance for built tools)."""
        return self._raise_on_error

    def call(self, arguments: dict[str, Any]) -> Any:
        """Pass the argument dict to the handler."""
        if self.handler is None:
            raise NotImplementedError(f"tool {self.name} has no handler")
        return self.handler(arguments)

    def execute(self, **kwargs: Any) -> Any:
        """Pass the keyword arguments to the handler as one dict."""
        return self.call(kwargs)


def _normalise_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    properties = {
        key: {"type": "string", **(spec or {})}
        for key, spec in (parameters.get("properties") or {}).items()
    }
    schema = {**parameters, "type": "object", "properties": properties}
    if "required" in parameters:
        schema["required"] = list(parameters["required"])
    return schema


def _json_type(annotation: Any) -> tuple[dict[str, Any], bool]:
    """JSON schema for a type hint, and whether the hint allows None."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        schema, _ = _json_type(args[0]) if len(args) == 1 else ({}, False)
        return schema, len(args) < len(typing.get_args(annotation))
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        return {"type": _JSON_TYPES.get(type(values[0]), "string"), "enum": values}, False
    if origin in (list, tuple, set):
        items = typing.get_args(annotation)
        array: dict[str, Any] = {"type": "array"}
        if items and items[0] is not Ellipsis:
            array["items"] = _json_type(items[0])[0]
        return array, False
    if origin is dict:
        return {"type": "object"}, False
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}, False
    return {}, False


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and the ``Args:`` descriptions."""
    summary_lines: list[str] = []
    arg_docs: dict[str, str] = {}
    section, current, arg_indent = "summary", None, None
    for raw in inspect.cleandoc(doc).splitlines():
        line = raw.strip()
        if re.fullmatch(r"(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?):", line):
            section, current = line[:-1], None
        elif section == "summary":
            summary_lines.append(line)
        elif section in ("Args", "Arguments", "Parameters") and line:
            indent = len(raw) - len(raw.lstrip())
            match = re.match(r"(\w+)\s*(\([^)]*\))?\s*:\s*(.*)", line)
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent, current = indent, match.group(1)
                arg_docs[current] = match.group(3)
            elif current:
                arg_docs[current] = f"{arg_docs[current]} {line}".strip()
    return " ".join(line for line in summary_lines if line).strip(), arg_docs


def _function_schema(func: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    hints = typing.get_type_hints(func)
    summary, arg_docs = _docstring_parts(func.__doc__ or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or name in ("self", "robot"):
            continue
        schema, optional = _json_type(hints.get(name, str))
        if name in arg_docs:
            schema = {**schema, "description": arg_docs[name]}
        properties[name] = schema
        if param.default is inspect.Parameter.empty and not optional:
            required.append(name)
    return summary, {"type": "object", "properties": properties, "required": required}


def tool(
    func: Callable[..., Any] | None = None, *, name: str | None = None,
    raise_on_error: bool = False, side_effects: bool = False,
) -> Any:
    """Make a ``Tool`` from a typed, documented function.

    The JSON schema comes from the type hints (``str``, ``int``, ``float``, ``bool``,
    ``list[X]``, ``dict``, ``Literal[...]``, ``X | None``) and the Google-style docstring (the
    summary becomes the description, ``Args:`` the parameter descriptions). Parameters without
    a default are required. A parameter named ``robot`` is not shown to the model; it receives
    the robot running the tool.

    Use as ``@tool`` or ``@tool(name="other_name", raise_on_error=True, side_effects=True)``.
    """

    def build(f: Callable[..., Any]) -> Tool:
        description, schema = _function_schema(f)
        wants_robot = "robot" in inspect.signature(f).parameters
        built: _HandlerTool

        def handler(arguments: dict[str, Any]) -> Any:
            if wants_robot:
                return f(robot=built.robot, **arguments)
            return f(**arguments)

        built = _HandlerTool(name or f.__name__, description, schema, handler,
                             raise_on_error=raise_on_error)
        built.side_effects = side_effects
        built.__doc__ = f.__doc__
        built.__wrapped__ = f  # type: ignore[attr-defined]
        return built

    return build(func) if func is not None else build
