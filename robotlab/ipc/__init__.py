"""Local inter-process framing: JSON objects, one per line, over a stream socket or pipe."""

from __future__ import annotations

from robotlab.ipc.json_lines import LineReader, decode, encode, send

__all__ = ["LineReader", "decode", "encode", "send"]
