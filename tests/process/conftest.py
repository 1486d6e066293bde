"""Real processes for the process tests: brokers and robotds, started and reaped by fixtures.

Each process is started with Popen, waited for by a condition (the broker answers a ping; a
robotd shows up in ``ps``), and in teardown terminated, waited with a timeout, and killed as a
last resort.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from robotlab import bus
from tests.waiting import wait_until

pytestmark = pytest.mark.process

HANDLERS = str(Path(__file__).parent / "handlers")


@pytest.fixture(autouse=True)
def state_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A broker started without --journal keeps its journal under the test's folder, never in
    the home folder, where brokers of tests running side by side would lock each other out."""
    folder = tmp_path / "state"
    monkeypatch.setenv("STATE_DIRECTORY", str(folder))
    return folder


@pytest.fixture
def endpoint() -> Iterator[str]:
    """A fresh ipc:// endpoint (short path: ipc paths are limited to about 100 bytes)."""
    folder = tempfile.mkdtemp(prefix="rl-")
    yield f"ipc://{folder}/broker.sock"
    shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Proc:
    """A started process and the arguments to start it again."""

    argv: list[str]
    env: dict[str, str]
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class Processes:
    """Starts processes and stops them all at teardown."""

    tmp: Path
    started: list[Proc] = field(default_factory=list)

    def start(self, argv: list[str], env: dict[str, str] | None = None, name: str = "proc") -> Proc:
        log = self.tmp / f"{name}-{len(self.started)}.log"
        full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([HANDLERS, os.environ.get("PYTHONPATH", "")]), **(env or {})}
        with open(log, "wb") as out:
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=full_env, start_new_session=True)
        proc = Proc(argv, full_env, popen, log)
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.started:
            stop(proc)


def stop(proc: Proc, timeout: float = 5.0) -> int:
    """SIGTERM, wait, SIGKILL as a last resort; return the exit code."""
    if proc.popen.poll() is None:
        proc.popen.send_signal(signal.SIGTERM)
        try:
            return proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
    return proc.popen.wait(timeout)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    """Start any process; all are stopped at teardown."""
    procs = Processes(tmp_path)
    yield procs
    procs.stop_all()


def broker_argv(url: str, *extra: str) -> list[str]:
    """The command line of a broker process: a journal beside an ipc:// socket (none for tcp://,
    unless ``extra`` names one), and holds of 1 s; later options in ``extra`` win."""
    if "--journal" in extra or "--no-journal" in extra:
        journal = []
    elif url.startswith("ipc://"):
        journal = ["--journal", str(Path(url[len("ipc://"):]).with_name("broker.db"))]
    else:
        journal = ["--no-journal"]
    return [sys.executable, "-m", "robotlab.cli", "broker", "--bind", url, "--heartbeat", "0.2", "--hold", "1", *journal, *extra]


def ping(url: str) -> bool:
    """True when a broker answers at ``url``."""
    try:
        with bus.connect(url, name="fixture-ping", timeout=0.5) as client:
            return bool(client.admin("ping", timeout=1))
    except Exception:
        return False


@pytest.fixture
def start_broker(processes: Processes):
    """Start a broker process at a URL and wait until it answers."""

    def start(url: str, *extra: str) -> Proc:
        proc = processes.start(broker_argv(url, *extra), name="broker")
        wait_until(lambda: ping(url) or proc.popen.poll() is not None, timeout=15, message="broker answers a ping")
        assert proc.popen.poll() is None, proc.output()
        return proc

    return start


@pytest.fixture
def broker(start_broker, endpoint: str) -> str:
    """A running broker (heartbeat 0.2 s, ack timeout 3 s); its URL."""
    start_broker(endpoint, "--ack-timeout", "3")
    return endpoint


def live(url: str, name: str) -> list[dict]:
    """The ``ps`` rows of robots named ``name``."""
    with bus.connect(url, name="fixture-ps", timeout=2) as client:
        return [row for row in client.admin("ps") if row["name"] == name]


@pytest.fixture
def start_robotd(processes: Processes, broker: str):
    """Start ``robotd --name NAME --handler H`` on the broker and wait until it is live."""

    def start(name: str, handler: str = "handlers:echo", *extra: str, wait: bool = True,
              env: dict[str, str] | None = None) -> Proc:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", broker, "--handler", handler, *extra]
        proc = processes.start(argv, env=env, name=f"robotd-{name}")
        if wait:
            wait_until(lambda: any(r["pid"] == proc.pid for r in live(broker, name)) or proc.popen.poll() is not None,
                       timeout=15, message=f"robotd {name} is live")
            assert proc.popen.poll() is None, proc.output()
        return proc

    return start
