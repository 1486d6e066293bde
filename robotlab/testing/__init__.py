"""Test doubles for robotlab, shipped with the package: a scripted model and a script server.

``ScriptedLLM(replies=[...])`` answers in process; ``serve_script(turns)`` (or
``python -m robotlab.testing.llm_server --script FILE``) answers over real HTTP in the
OpenAI format, so litellm's own code path runs. Both read the same script format
(``robotlab.testing.script``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from robotlab.testing.script import Script, Turn, load_script, parse_turns
from robotlab.testing.scripted_llm import RecordedRequest, ScriptedLLM
from robotlab.testing.tool_source import DictToolSource

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

__all__ = [
    "DictToolSource",
    "RecordedRequest",
    "Script",
    "ScriptedLLM",
    "Turn",
    "load_script",
    "parse_turns",
    "requests_seen",
    "serve_script",
]



# The server module is imported on use only: ``python -m robotlab.testing.llm_server`` must not
# find it already imported by this package.
def serve_script(turns: Any) -> AbstractContextManager[str]:
    """Run a script server in a thread; see ``robotlab.testing.llm_server.serve_script``."""
    from robotlab.testing.llm_server import serve_script as serve

    return serve(turns)


def requests_seen(url: str, what: str = "requests") -> list[dict[str, Any]]:
    """Request bodies (or ``"headers"``) a script server received.

    See ``robotlab.testing.llm_server``.
    """
    from robotlab.testing.llm_server import requests_seen as seen

    return seen(url, what)
