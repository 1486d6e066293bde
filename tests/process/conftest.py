"""Real processes for the process tests: brokers and robotds, started and reaped by fixtures.

Long-lived processes (the broker fixture, robotds that serve a test) run on pytest-xprocess
(``Processes.keep``): it starts them, waits until a readiness check passes, and at teardown
terminates the whole process tree, SIGKILL as a last resort. ``Processes.start`` keeps plain
Popen for the rest, with one reason each: a process a test stops and starts again on the same
address, or one expected to exit by itself, has no readiness for xprocess to wait on.

Every path is unique to a test (``tmp_path``, ``mkdtemp`` endpoints) and every TCP port is
chosen by the kernel, so the tests run in parallel under pytest-xdist.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from xprocess import ProcessStarter, XProcess, XProcessResources

from robotlab import bus
from tests.process.netns_hosts import hosts  # noqa: F401 (a fixture: two test hosts in network namespaces)

pytestmark = pytest.mark.process

HANDLERS = str(Path(__file__).parent / "handlers")
# How long a robotd hosting a model robot may take to join: it imports litellm first, 3-4 s on
# an idle machine and past 30 s when parallel workers and other jobs share two cores.
ROBOT_READY = 60


@pytest.fixture(scope="session")
def xprocess(request: pytest.FixtureRequest,
             tmpdir_factory: pytest.TempdirFactory) -> Iterator[XProcess]:
    """pytest-xprocess's helper, rooted in this session's temporary folder instead of the cache.

    The plugin's own fixture keeps its records in ``.pytest_cache``, which every xdist worker
    shares and ``-p no:cacheprovider`` removes; a folder per session needs neither.
    """
    with XProcess(request.config, tmpdir_factory.mktemp("xprocess")) as xproc:
        request.config._xprocess = xproc  # the plugin's Ctrl-C handler terminates from here
        yield xproc


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
    xprocess: XProcess
    started: list[Proc] = field(default_factory=list)
    kept: dict[str, XProcessResources] = field(default_factory=dict)

    def start(self, argv: list[str], env: dict[str, str] | None = None, name: str = "proc") -> Proc:
        """Start with plain Popen: for a process that exits by itself or is restarted in a test."""
        log = self.tmp / f"{name}-{len(self.started)}.log"
        full_env = _environment(env)
        with open(log, "wb") as out:
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=full_env,
                                     start_new_session=True)
        proc = Proc(argv, full_env, popen, log)
        self.started.append(proc)
        return proc

    def keep(self, argv: list[str], ready: Callable[[Proc], Any], env: dict[str, str] | None = None,
             name: str = "proc", timeout: float = 15) -> Proc:
        """Start a long-lived process on pytest-xprocess; return once ``ready(proc)`` is true.

        Raises:
            AssertionError: the process exited, or was not ready in ``timeout`` seconds (its
                output is the message).
        """
        full_env = _environment(env)
        started: list[Proc] = []

        def check(starter: ProcessStarter) -> bool:
            if not started:  # xprocess has just made the Popen; its resources are the last ones
                popen = starter.process.resources[-1].popen
                started.append(Proc(argv, full_env, popen,
                                    Path(str(self.xprocess.getinfo(key).logpath))))
            return bool(ready(started[0])) or started[0].popen.poll() is not None

        # xprocess names a process's control folder by its key, and takes a running process of that
        # key for this one: keys must be unique in the session. A counter in this module was not:
        # test modules that import these fixtures load a second copy of it, with a second counter.
        key = f"{name}-{uuid.uuid4().hex[:12]}"
        starter = type("Starter", (ProcessStarter,),
                       {"args": argv, "env": full_env, "timeout": timeout,
                        "terminate_on_interrupt": True, "startup_check": check})
        try:
            self.xprocess.ensure(key, starter, persist_logs=False)
        except TimeoutError as exc:
            raise AssertionError(f"{name} not ready in {timeout:g}s; its output:\n"
                                 f"{started[0].output() if started else ''}") from exc
        finally:
            # ensure made it first; stopped at teardown
            self.kept[key] = self.xprocess.resources[-1]
        proc = started[0]
        assert proc.popen.poll() is None, proc.output()
        return proc

    def stop_all(self) -> None:
        for proc in self.started:
            stop(proc)
        # The plugin copies each kept process's new output into every test report, until
        # the name leaves its list.
        shown = self.xprocess.config.__dict__.get("_extlogfiles", {})
        for key, resources in self.kept.items():
            if resources.info is None:  # Popen itself failed: nothing to stop
                continue
            info, _ = resources.info
            info.terminate(timeout=5)  # the process tree: SIGTERM, then SIGKILL
            shown.pop(key, None)
            resources.release()  # closes its log and reaps the process


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    """The test's environment, with the handler modules importable, plus ``env``."""
    path = os.pathsep.join([HANDLERS, os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, **(env or {})}


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
def processes(tmp_path: Path, xprocess: XProcess) -> Iterator[Processes]:
    """Start any process; all are stopped at teardown."""
    procs = Processes(tmp_path, xprocess)
    yield procs
    procs.stop_all()


def free_tcp_url() -> str:
    """A loopback TCP address whose port the kernel just handed out (free, for a broker to bind)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{probe.getsockname()[1]}"


def broker_argv(url: str, *extra: str) -> list[str]:
    """The command line of a broker process: a journal beside an ipc:// socket (none for tcp://,
    unless ``extra`` names one), holds of 1 s, and a robot silent for 2 s is gone; later
    options in ``extra`` win."""
    if "--journal" in extra or "--no-journal" in extra:
        journal = []
    elif url.startswith("ipc://"):
        journal = ["--journal", str(Path(url[len("ipc://"):]).with_name("broker.db"))]
    else:
        journal = ["--no-journal"]
    # Liveness 10, not the default 3: with xdist two workers share two cores, and a robotd
    # making its first litellm call under that load has gone unheard for over a second.
    return [sys.executable, "-m", "robotlab.cli", "broker", "--bind", url, "--heartbeat", "0.2",
            "--liveness", "10", "--hold", "1", *journal, *extra]


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
        return processes.keep(broker_argv(url, *extra), lambda proc: ping(url), name="broker")

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


def is_live(url: str, name: str, proc: Proc) -> bool:
    """True when ``proc`` is on the broker at ``url`` as ``name``."""
    return any(row["pid"] == proc.pid for row in live(url, name))


@pytest.fixture
def start_robotd(processes: Processes, broker: str):
    """Start ``robotd --name NAME --handler H`` on the broker and wait until it is live."""

    def start(name: str, handler: str = "handlers:echo", *extra: str, wait: bool = True,
              env: dict[str, str] | None = None) -> Proc:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", broker,
                "--handler", handler, *extra]
        if not wait:
            return processes.start(argv, env=env, name=f"robotd-{name}")
        return processes.keep(argv, lambda proc: is_live(broker, name, proc), env=env,
                              name=f"robotd-{name}")

    return start
