"""The MCP reference servers from npm, installed once per test session; every test that needs
one is skipped, with the reason, when node or the npm registry is not there."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.waiting import wait_until

PACKAGE = "@modelcontextprotocol/server-everything"


@pytest.fixture(scope="session")
def everything_js(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The entry point of ``server-everything``, installed with npm into a session folder."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed")
    prefix = tmp_path_factory.mktemp("npm")
    try:
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), PACKAGE],
                              capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm install {PACKAGE} took more than 300 s (is the registry reachable?)")
    entry = prefix / "node_modules" / PACKAGE / "dist" / "index.js"
    if done.returncode != 0 or not entry.is_file():
        pytest.skip(f"npm install {PACKAGE} failed (is the registry reachable?): {done.stderr.strip()[-300:]}")
    return str(entry)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _accepts(port: int) -> bool:
    with socket.socket() as conn:
        return conn.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def everything_http(everything_js: str, tmp_path: Path) -> Iterator[str]:
    """``server-everything`` over streamable HTTP on a free loopback port; its URL."""
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(["node", everything_js, "streamableHttp"], env={"PORT": str(port), "PATH": "/usr/bin:/bin"},
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: _accepts(port) or server.poll() is not None, timeout=30, message="the HTTP server listens")
        assert server.poll() is None, (tmp_path / "server.log").read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
