"""``run(message, with_=...)``: files and URLs sent beside the message (Ruby's ``with:``).

The message becomes a list of content parts in the OpenAI format, which litellm translates for
each provider: the text first, then one part per attachment. An image (a file, or an ``http``/
``https`` URL ending in an image suffix) is an ``image_url`` part (files as ``data:`` URLs); a
PDF file is a ``file`` part with its data URL; a text file (``text/*``, JSON, YAML) is a text
part headed by its name. A dict that already is a content part (``{"type": "text", ...}``, as
``MCPClient.resource_part`` makes) is sent as it is. Anything else is a ``ConfigError`` before
the model is asked.
"""

from __future__ import annotations

import base64
import mimetypes
import os
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigError

__all__ = ["content_with", "pop_attachments"]

_TEXT_TYPES = ("application/json", "application/x-yaml", "application/yaml", "application/xml")
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def pop_attachments(template_context: dict[str, Any]) -> list[Any]:
    """Take ``with_`` (or ``with``, given as ``**{"with": ...}``) out of a run's keyword
    arguments."""
    given = template_context.pop("with_", None)
    given = template_context.pop("with", None) if given is None else given
    if given is None:
        return []
    return list(given) if isinstance(given, (list, tuple)) else [given]


def content_with(text: str, attachments: list[Any]) -> str | list[dict[str, Any]]:
    """The message content: ``text`` alone, or text and attachment parts.

    Raises:
        ConfigError: an attachment that is missing, unreadable or of a kind no part carries.
    """
    if not attachments:
        return text
    return [{"type": "text", "text": text}, *(_part(item) for item in attachments)]


def _part(item: Any) -> dict[str, Any]:
    if isinstance(item, dict) and item.get("type") in ("text", "image_url", "file"):
        return dict(item)  # already a content part (an MCP resource's, for one)
    if isinstance(item, str) and item.startswith(("http://", "https://")):
        if item.lower().split("?", 1)[0].endswith(_IMAGE_SUFFIXES):
            return {"type": "image_url", "image_url": {"url": item}}
        raise ConfigError(f"attachment {item!r}: only image URLs can be sent as links; download "
                          "other files first")
    if not isinstance(item, (str, os.PathLike)):
        raise ConfigError(f"attachment {item!r}: give a file path or an image URL")
    path = Path(item)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"attachment {str(path)!r} cannot be read: "
                          f"{exc.strerror or exc}") from exc
    kind = mimetypes.guess_type(path.name)[0] or ""
    if kind.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": _data_url(kind, data)}}
    if kind == "application/pdf":
        return {"type": "file",
                "file": {"filename": path.name, "file_data": _data_url(kind, data)}}
    if (kind.startswith("text/") or kind in _TEXT_TYPES
            or path.suffix in (".md", ".yml", ".yaml", ".toml")):
        text = data.decode("utf-8", errors="replace")
        return {"type": "text", "text": f"--- {path.name} ---\n{text}"}
    raise ConfigError(f"attachment {str(path)!r}: {kind or 'unknown type'} is not an image, PDF or "
                      "text file")


def _data_url(kind: str, data: bytes) -> str:
    return f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}"
