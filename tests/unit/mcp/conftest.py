"""The MCP reference servers from npm, installed once per test session; every test that needs
one is skipped, with the reason, when node or the npm registry is not there."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix),
                               *PACKAGES],
                              capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of the MCP reference servers took more than 300 s (is the "
                    "registry reachable?)")
    entries = {name: prefix / "node_modules" / name / "dist" / "index.js" for name in PACKAGES}
    if done.returncode != 0 or not all(entry.is_file() for entry in entries.values()):
        pytest.skip("npm install of the MCP reference servers failed (is the registry reachable?): "
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


@contextmanager
def _http_server(argv: list[str], port: int, log_path: Path,
                 env: dict[str, str] | None = None) -> Iterator[None]:
    """Run an HTTP server process until the block ends; it must listen on ``port`` first."""
    log = log_path.open("w")
    server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        wait_until(lambda: _accepts(port) or server.poll() is not None, timeout=60,
                   message="the HTTP server listens")
        assert server.poll() is None, log_path.read_text()
        yield
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture
def everything_http(everything_js: str, tmp_path: Path) -> Iterator[str]:
    """``server-everything`` over streamable HTTP on a free loopback port; its URL."""
    port = _free_port()
    with _http_server(["node", everything_js, "streamableHttp"], port, tmp_path / "server.log",
                      env={"PORT": str(port), "PATH": "/usr/bin:/bin"}):
        yield f"http://127.0.0.1:{port}/mcp"


GUARDED_TOKEN = "a-static-test-token"
"""The bearer token the guarded server accepts besides the ones it issues through OAuth."""


@contextmanager
def _guarded(tmp_path: Path, token_seconds: int) -> Iterator[str]:
    port = _free_port()
    script = str(Path(__file__).with_name("oauth_server.py"))
    with _http_server([sys.executable, script, str(port), GUARDED_TOKEN, str(token_seconds)], port,
                      tmp_path / "guarded.log"):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def guarded_http(tmp_path: Path) -> Iterator[str]:
    """An MCP server over streamable HTTP behind the SDK's OAuth authorization server
    (``oauth_server.py``), on a free loopback port; its URL."""
    with _guarded(tmp_path, 3600) as url:
        yield url


@pytest.fixture
def short_token_http(tmp_path: Path) -> Iterator[str]:
    """The same server, whose access tokens last 2 seconds (refresh tokens do not expire)."""
    with _guarded(tmp_path, 2) as url:
        yield url


@pytest.fixture
def callback_uri() -> str:
    """A loopback redirect URI on a free port, for the OAuth callback."""
    return f"http://127.0.0.1:{_free_port()}/callback"
