"""The real-model tier: a llama.cpp server with a real open-weights model, started as a process.

``make test-model`` installs the server and the model (``install_server.sh``) and runs this
folder with ``ROBOT_LAB_MODEL_SERVER_PYTHON`` and ``ROBOT_LAB_MODEL_FILE`` set; without them the
tier skips with one line saying so. The tests assert what robotlab controls (bounded time, the
error named, nothing retried unchanged, records written), never what the model answers.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.process.conftest import (  # noqa: F401  (fixtures used by the tests here)
    Processes,
    broker,
    endpoint,
    processes,
    start_broker,
    state_directory,
    xprocess,
)
from tests.waiting import wait_until

MODEL_ALIAS = "qwen2.5-coder-0.5b-instruct"
CONTEXT = 4096
"""The server's context window: small enough that an overflow is cheap to provoke."""
SERVER_READY = 180


@dataclass(frozen=True)
class ModelServer:
    """A running model server: its OpenAI-compatible base URL and the litellm settings to reach
    it."""

    url: str
    log: Path

    @property
    def model(self) -> str:
        return f"openai/{MODEL_ALIAS}"

    def robot_settings(self) -> dict[str, str]:
        return {"model": self.model, "api_base": self.url, "api_key": "not-needed"}

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
            return bool(json.load(response).get("data"))
    except OSError:
        return False


@contextmanager
def running_server(folder: Path, context: int) -> Iterator[ModelServer]:
    """A llama.cpp server of the tier's model with a context window of ``context`` tokens, its
    log in ``folder``; its process group stopped at the end."""
    python = os.environ.get("ROBOT_LAB_MODEL_SERVER_PYTHON")
    model = os.environ.get("ROBOT_LAB_MODEL_FILE")
    if not python or not model:
        pytest.skip("the real-model tier needs its server: "
                    "run `make test-model`, which installs it")
    port = _free_port()
    log = folder / "server.log"
    argv = [python, "-m", "llama_cpp.server", "--model", model, "--model_alias", MODEL_ALIAS,
            "--n_ctx", str(context), "--n_threads", str(min(os.cpu_count() or 2, 4)),
            "--host", "127.0.0.1", "--port", str(port)]
    with open(log, "wb") as out:
        server = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until(lambda: server.poll() is not None or _answers(url), timeout=SERVER_READY,
                   message="the model server answering")
        assert server.poll() is None, f"the model server exited:\n{log.read_text(errors='replace')}"
        yield ModelServer(url, log)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """One llama.cpp server for the whole tier."""
    with running_server(tmp_path_factory.mktemp("model-server"), CONTEXT) as server:
        yield server


END_OF_TEXT = {"151643": -100, "151645": -100}
"""A logit bias that bans this model's end-of-text tokens: a reply then runs to its token cap,
whatever the model would have said, so its length is set by the test and not by the model."""


@pytest.fixture(scope="session")
def generation_rate(model_server: ModelServer) -> float:
    """Tokens per second this server generates on this machine, measured once: tests that need
    a reply longer than a deadline size it from this, so a faster CI machine does not finish early.
    The measure includes reading the prompt, so it errs low, and the tests size with a margin."""
    tokens = 32
    body = json.dumps({"model": MODEL_ALIAS,
                       "messages": [{"role": "user", "content": "Count to fifty."}],
                       "max_tokens": tokens, "logit_bias": END_OF_TEXT}).encode()
    request = urllib.request.Request(f"{model_server.url}/chat/completions", body,
                                     {"Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=300) as response:
        generated = json.load(response)["usage"]["completion_tokens"]
    return float(generated) / (time.monotonic() - started)


def wait_idle(server: ModelServer, timeout: float = 60) -> float:
    """Seconds until the server answers a one-token request: how long it stayed busy with
    earlier work (llama.cpp's server generates one request at a time)."""
    body = json.dumps({"model": MODEL_ALIAS, "messages": [{"role": "user", "content": "Say OK."}],
                       "max_tokens": 1}).encode()
    request = urllib.request.Request(f"{server.url}/chat/completions", body,
                                     {"Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()
    return time.monotonic() - started
