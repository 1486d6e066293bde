"""Tool calls written as bare JSON in a reply's text, as local models often answer.

When tools were offered and the reply has no structured tool calls, a reply whose whole text is
a JSON tool call (optionally in a ```json fence or ``<tool_call>`` tags, alone or as a list)
naming offered tools is read as those tool calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from robotlab.llm import ToolCall

__all__ = ["parse_text_tool_calls"]

_WRAPPERS = (
    re.compile(r"^```(?:json|tool_call)?\s*(.*?)\s*```$", re.DOTALL),
    re.compile(r"^<tool_call>\s*(.*?)\s*</tool_call>$", re.DOTALL),
)
_NAME_KEYS = ("name", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "tool_input")


def _unwrap(text: str) -> str:
    text = text.strip()
    for pattern in _WRAPPERS:
        match = pattern.match(text)
        if match:
            return match.group(1).strip()
    return text


def _call_from(item: Any, index: int, offered: Collection[str]) -> ToolCall | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
    if name is None or name not in offered:
        return None
    arguments: Any = next((item[k] for k in _ARGUMENT_KEYS if k in item), {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(f"text_call_{index}", name, arguments)


def parse_text_tool_calls(content: str | None, offered: Collection[str]) -> tuple[ToolCall, ...]:
    """The tool calls ``content`` spells out as JSON, or ``()`` when it is not exactly that."""
    if not content or not offered:
        return ()
    text = _unwrap(content)
    if not text.startswith(("{", "[")):
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        return ()
    items = value if isinstance(value, list) else [value]
    calls = [_call_from(item, i, offered) for i, item in enumerate(items)]
    if not calls or any(call is None for call in calls):
        return ()
    return tuple(call for call in calls if call is not None)
