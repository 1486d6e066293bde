"""The unit tier's own rule: nothing of ours is left unclosed.

A socket, file or process a test (or the code it runs) leaves for the garbage collector is a
ResourceWarning; here it fails the test that left it, so a leak is found where it starts. The
process tiers are not held to it: their processes' resources are their processes' own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent
UNCLOSED_FAILS = (
    pytest.mark.filterwarnings("error::ResourceWarning"),
    # A ResourceWarning raised in __del__ reaches pytest as an unraisable exception.
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/unit (this hook sees the whole session's items)."""
    for item in items:
        if HERE in item.path.parents:
            for mark in UNCLOSED_FAILS:
                item.add_marker(mark)
