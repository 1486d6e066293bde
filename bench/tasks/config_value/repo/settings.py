"""The uploader's settings, read from settings.json beside this file."""

import json
from pathlib import Path


def load_settings():
    """The settings as a dict."""
    return json.loads((Path(__file__).parent / "settings.json").read_text())
