"""What an MCP server answers, read as plain data: a tool's result, resources, prompts, one page
of a listing, and whether an SDK error means the server refused or is gone.

The SDK's reply objects differ between mcp 1.x and 2.x (``mimeType`` or ``mime_type``...);
this module is the one place that reads them, so ``mcp_client.py`` handles only the session.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from robotlab.errors import MCPError

__all__ = [
    "attachable_part",
    "content_info",
    "is_refusal",
    "page_request",
    "part_text",
    "prompt_info",
    "resource_info",
    "result_text",
    "root_cause",
]


def result_text(result: Any) -> str:
    """A tool call's result as text: its content parts, one a line."""
    items = getattr(result, "content", None) or []
    parts = [getattr(item, "text", None) or str(item) for item in items]
    return "\n".join(parts)


def page_request(
    method: Callable[[Any], Callable[..., Coroutine[Any, Any, Any]]],
    cursor: str | None,
    session: Any,
) -> Coroutine[Any, Any, Any]:
    """The request for one page: ``method(session)`` called at ``cursor``."""
    return _page(method(session), cursor)


def _page(
    list_call: Callable[..., Coroutine[Any, Any, Any]], cursor: str | None
) -> Coroutine[Any, Any, Any]:
    if cursor is None:
        return list_call()
    from mcp import types

    return list_call(params=types.PaginatedRequestParams(cursor=cursor))


def is_refusal(error: BaseException) -> bool:
    """True for the SDK's error for a JSON-RPC error answer (no such resource, bad arguments).

    The SDK raises the same class when the connection closes or a request times out; those
    codes mean the server is gone or slow, not that it refused, and stay retryable.
    """
    from mcp import types
    from mcp.shared import exceptions

    # mcp 1.x calls it McpError, 2.x MCPError.
    sdk_error = getattr(exceptions, "MCPError", None) or getattr(exceptions, "McpError", None)
    if sdk_error is None or not isinstance(error, sdk_error):
        return False
    code = getattr(getattr(error, "error", None), "code", None)
    return code not in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT)


def part_text(part: Any) -> str:
    """A prompt message's content as text (an embedded resource gives its text or URI)."""
    text = getattr(part, "text", None)
    if text is not None:
        return str(text)
    resource = getattr(part, "resource", None)
    return str(getattr(resource, "text", None) or getattr(resource, "uri", None) or part)


def resource_info(resource: Any) -> dict[str, Any]:
    """A listed resource: ``{"uri", "name", "description", "mime_type"}``."""
    return {
        "uri": str(resource.uri),
        "name": resource.name,
        "description": getattr(resource, "description", None),
        "mime_type": getattr(resource, "mime_type", None) or getattr(resource, "mimeType", None),
    }


def content_info(item: Any) -> dict[str, Any]:
    """One content of a read resource: ``{"uri", "mime_type"}`` and its ``text`` or ``blob``."""
    mime_type = getattr(item, "mime_type", None) or getattr(item, "mimeType", None)
    info = {"uri": str(item.uri), "mime_type": mime_type}
    if getattr(item, "text", None) is not None:
        return {**info, "text": item.text}
    return {**info, "blob": getattr(item, "blob", "")}


def prompt_info(prompt: Any) -> dict[str, Any]:
    """A listed prompt: ``{"name", "description", "arguments": [{"name", "required", ...}]}``."""
    arguments = [
        {"name": a.name, "required": bool(a.required), "description": a.description}
        for a in (getattr(prompt, "arguments", None) or [])
    ]
    description = getattr(prompt, "description", None)
    return {"name": prompt.name, "description": description, "arguments": arguments}


def root_cause(error: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK's task groups wrap what really failed)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def attachable_part(uri: str, contents: list[dict[str, Any]]) -> dict[str, Any]:
    """Resource ``uri``'s ``contents`` as one message content part: an image blob as an
    ``image_url`` data URL, else its text headed by the URI.

    Raises:
        MCPError: the resource is binary and not an image.
    """
    images = [c for c in contents if "blob" in c and _is_image(c)]
    if images:
        url = f"data:{images[0]['mime_type']};base64,{images[0]['blob']}"
        return {"type": "image_url", "image_url": {"url": url}}
    texts = [c["text"] for c in contents if "text" in c]
    if not texts:
        kind = contents[0].get("mime_type") if contents else "empty"
        raise MCPError(
            f"MCP resource {uri} is binary ({kind}); only text and images can be attached"
        )
    return {"type": "text", "text": f"--- {uri} ---\n" + "\n".join(texts)}


def _is_image(content: dict[str, Any]) -> bool:
    return str(content.get("mime_type") or "").startswith("image/")
