"""Test doubles for robotlab, shipped with the package: a scripted model and a script server.

``ScriptedLLM(replies=[...])`` answers in process; ``serve_script(turns)`` (or
``python -m robotlab.testing.llm_server --script FILE``) answers over real HTTP in the
OpenAI format, so litellm's own code path runs. Both read the same script format
(``robotlab.testing.script``).
"""

from __future__ import annotations

from robotlab.testing.llm_server import requests_seen, serve_script
from robotlab.testing.script import Script, Turn, load_script, parse_turns
from robotlab.testing.scripted_llm import RecordedRequest, ScriptedLLM

__all__ = [
    "RecordedRequest",
    "Script",
    "ScriptedLLM",
    "Turn",
    "load_script",
    "parse_turns",
    "requests_seen",
    "serve_script",
]

