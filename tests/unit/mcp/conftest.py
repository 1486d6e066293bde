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

PACKAGES = ("@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem")


@pytest.fixture(scope="session")
def reference_servers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Package name -> entry point of the reference servers, installed with npm once per session."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed")
    prefix = tmp_path_factory.mktemp("npm")
    try:
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *PACKAGES],
                              capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of the MCP reference servers took more than 300 s (is the registry reachable?)")
    entries = {name: prefix / "node_modules" / name / "dist" / "index.js" for name in PACKAGES}
    if done.returncode != 0 or not all(entry.is_file() for entry in entries.values()):
        pytest.skip(f"npm install of the MCP reference servers failed (is the registry reachable?): "
                    f"{done.stderr.strip()[-300:]}")
    return {name: str(entry) for name, entry in entries.items()}


@pytest.fixture
def everything_js(reference_servers: dict[str, str]) -> str:
    """The entry point of ``server-everything``."""
    return reference_servers[PACKAGES[0]]


@pytest.fixture
def filesystem_js(reference_servers: dict[str, str]) -> str:
    """The entry point of ``server-filesystem``."""
    return reference_servers[PACKAGES[1]]


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
