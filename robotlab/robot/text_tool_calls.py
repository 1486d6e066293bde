"""Tool calls written as bare JSON in a reply's text, as local models often answer.

When tools were offered and the reply has no structured tool calls, a reply whose whole text is
a JSON tool call (optionally in a ```json fence or ``<tool_call>`` tags, alone or as a list)
is read as those tool calls; text after the leading JSON value is ignored. The arguments may
be an object or a JSON string of one. A call
that names no offered tool but spells out its arguments (small models put a title or the task
in ``name``) is read as the one offered tool whose parameters those arguments fit, when
exactly one fits; otherwise it keeps the invented name, and the tool loop answers it with the
names of the real tools. Without an arguments key, JSON naming no offered tool is plain text.

A reply that is no JSON call but holds fenced code blocks, each under a line naming a file
(``slicing.py``, ``### slicing.py``, "Here is the updated `slicing.py`:"), is read as one call
per block with ``{"path": ..., "content": ...}`` to the one offered tool whose parameters are
exactly those two (``parse_file_blocks``): small models rewrite a whole file far more reliably
than they write an edit call. Shell and JSON blocks are never files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from robotlab.llm import ToolCall
from robotlab.text.file_names import named_path

__all__ = ["fitting_tool", "parse_file_blocks", "parse_text_tool_calls"]

_WRAPPERS = (
    re.compile(r"^```(?:json|tool_call)?\s*(.*?)\s*```$", re.DOTALL),
    re.compile(r"^<tool_call>\s*(.*?)\s*</tool_call>$", re.DOTALL),
)
# The opening of a fence or tag whose closing a trailing line kept ``_WRAPPERS`` from matching.
_OPENERS = re.compile(r"^(?:```(?:json|tool_call)?\s*|<tool_call>\s*)")
_FENCE = re.compile(r"^```([\w+-]*)[ \t]*\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)
_NOT_FILES = {"bash", "sh", "shell", "console", "zsh", "json", "tool_call", "mswea_bash_command"}
_NAME_KEYS = ("name", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "tool_input")


def _unwrap(text: str) -> str:
    text = text.strip()
    for pattern in _WRAPPERS:
        match = pattern.match(text)
        if match:
            return match.group(1).strip()
    return text


def _arguments(item: dict[str, Any]) -> dict[str, Any] | None:
    """The call's arguments (an object, or a JSON string of one).

    None when absent or not an object.
    """
    key = next((k for k in _ARGUMENT_KEYS if k in item), None)
    arguments = item[key] if key else None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return arguments if isinstance(arguments, dict) else None


def fitting_tool(arguments: dict[str, Any], schemas: Mapping[str, dict[str, Any]]) -> str | None:
    """The one tool whose parameters ``arguments`` fit (every key a property, every required key
    given), or None when none or several fit."""
    keys = set(arguments)
    fits = [name for name, schema in schemas.items()
            if keys and keys <= set(schema.get("properties") or {})
            and set(schema.get("required") or ()) <= keys]
    return fits[0] if len(fits) == 1 else None


def _call_from(item: Any, index: int, offered: Collection[str],
               schemas: Mapping[str, dict[str, Any]]) -> ToolCall | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
    if name is None:
        return None
    if name in offered and not any(k in item for k in _ARGUMENT_KEYS):
        return ToolCall(f"text_call_{index}", name, {})
    arguments = _arguments(item)
    if arguments is None:
        return None
    if name not in offered:
        name = fitting_tool(arguments, schemas) or name
    return ToolCall(f"text_call_{index}", name, arguments)


def parse_text_tool_calls(content: str | None, offered: Collection[str],
                          schemas: Mapping[str, dict[str, Any]] | None = None
                          ) -> tuple[ToolCall, ...]:
    """The tool calls ``content`` spells out as JSON, or ``()`` when it is not exactly that.

    ``schemas`` (tool name to its parameters' JSON schema) lets a call under an invented name
    be read as the one offered tool its arguments fit.
    """
    if not content or not offered:
        return ()
    text = _OPENERS.sub("", _unwrap(content), count=1)
    if not text.startswith(("{", "[")):
        return ()
    try:
        # The leading JSON value; small models sometimes add a stray line after the call.
        value, _ = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return ()
    items = value if isinstance(value, list) else [value]
    calls = [_call_from(item, i, offered, schemas or {}) for i, item in enumerate(items)]
    if not calls or any(call is None for call in calls):
        return ()
    return tuple(call for call in calls if call is not None)


def parse_file_blocks(content: str | None,
                      schemas: Mapping[str, dict[str, Any]]) -> tuple[ToolCall, ...]:
    """One ``{"path", "content"}`` call per fenced block under a line naming a file, to the one
    tool taking exactly those parameters; ``()`` when there is no such tool, no such block, or a
    block has no file named above it."""
    writers = [name for name, schema in schemas.items()
               if set(schema.get("properties") or {}) == {"path", "content"}]
    if not content or len(writers) != 1:
        return ()
    calls = []
    for index, match in enumerate(_FENCE.finditer(content)):
        if match.group(1).lower() in _NOT_FILES:
            continue
        above = [line for line in content[: match.start()].splitlines() if line.strip()]
        path = named_path(above[-1]) if above else None
        if path is None:
            return ()
        calls.append(ToolCall(f"file_block_{index}", writers[0],
                              {"path": path, "content": match.group(2) + "\n"}))
    return tuple(calls)

