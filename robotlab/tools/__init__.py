"""Tools shipped with robotlab: ``AskUser`` (ask the person at the terminal).

Each is a ``robotlab.Tool``; attach an instance with ``local_tools=[...]``.
"""

from __future__ import annotations

from robotlab.tools.ask_user import AskUser

__all__ = ["AskUser"]
