"""The file a line of prose names, as models name the file a code block holds.

``slicing.py``, ``### pkg/settings.json``, "Here is the updated `slicing.py`:": the last
back-quoted path on the line, else its last bare one. Abbreviations such as "e.g." are no
file names.
"""

from __future__ import annotations

import re

_QUOTED_PATH = re.compile(r"`([\w./-]+\.[A-Za-z]\w*)`")
_BARE_PATH = re.compile(r"(?<![\w/.-])([\w./-]*[A-Za-z_][\w-]*\.[A-Za-z]\w*)(?![\w/-])")
_ABBREVIATIONS = {"e.g", "i.e", "e.g.", "i.e."}


def named_path(line: str) -> str | None:
    """The file a line names.

    Its last `quoted` path, else its last bare one (``a.py``, ``pkg/b.txt``).
    """
    quoted = _QUOTED_PATH.findall(line)
    if quoted:
        return quoted[-1]
    bare = [token.rstrip(".") for token in _BARE_PATH.findall(line)
            if token.lower() not in _ABBREVIATIONS]
    return bare[-1] if bare else None
