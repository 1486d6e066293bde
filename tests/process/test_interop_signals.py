"""``robotlab mcp-serve --http`` and ``robotlab a2a-serve`` say where they serve only once
SIGTERM is in their hands: a SIGTERM right after that line ends each with exit 0, never by the
signal's default action."""

from __future__ import annotations

import pytest

from tests.process import test_a2a_serve_processes as a2a
from tests.process import test_mcp_serve_processes as mcp
from tests.process.conftest import stop

mcp_http, a2a_http = mcp.mcp_http, a2a.a2a_http  # the fixtures that start each server

pytestmark = pytest.mark.process


def test_a_sigterm_as_soon_as_mcp_serve_says_where_it_serves_ends_it_cleanly(mcp_http) -> None:
    _, server = mcp_http()
    assert stop(server) == 0, server.output()


def test_a_sigterm_as_soon_as_a2a_serve_says_where_it_serves_ends_it_cleanly(a2a_http) -> None:
    _, server = a2a_http()
    assert stop(server) == 0, server.output()
