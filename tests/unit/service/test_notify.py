"""sd_notify and log formats, against a real AF_UNIX datagram socket standing in for systemd."""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from robotlab.errors import ConfigError
from robotlab.service import Notifier, ServiceEnvironment, configure_logging, service_environment
from robotlab.service.logs import JsonFormatter
from tests.waiting import wait_until


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[socket.socket]:
    """What systemd listens on: a datagram socket at a path."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.settimeout(2)
    yield sock
    sock.close()


def received(sock: socket.socket) -> str:
    return sock.recv(4096).decode()


def test_ready_and_status_arrive_as_datagrams(manager: socket.socket) -> None:
    notifier = Notifier(ServiceEnvironment(notify_socket=manager.getsockname()))
    assert notifier.active
    notifier.ready("listening on tcp://127.0.0.1:5555")
    assert received(manager) == "READY=1\nSTATUS=listening on tcp://127.0.0.1:5555"
    notifier.status("waiting")
    assert received(manager) == "STATUS=waiting"
    notifier.stopping("draining")
    assert received(manager) == "STOPPING=1\nSTATUS=draining"


def test_the_watchdog_is_fed_at_half_its_interval_not_on_every_tick(manager: socket.socket) -> None:
    notifier = Notifier(ServiceEnvironment(notify_socket=manager.getsockname(),
                                           watchdog_seconds=0.2))
    notifier.ready("up")
    received(manager)
    manager.setblocking(False)
    notifier.tick("busy")  # right after READY: not due yet
    with pytest.raises(BlockingIOError):
        manager.recv(4096)
    manager.setblocking(True)

    def fed() -> str:
        notifier.tick("busy")
        manager.setblocking(False)
        try:
            return manager.recv(4096).decode()
        except BlockingIOError:
            return ""
        finally:
            manager.setblocking(True)

    assert wait_until(fed, timeout=2, message="a watchdog feed") == "WATCHDOG=1\nSTATUS=busy"


def test_no_watchdog_no_feed_and_no_socket_no_send(manager: socket.socket) -> None:
    Notifier(ServiceEnvironment(notify_socket=manager.getsockname())).tick("x")
    manager.setblocking(False)
    with pytest.raises(BlockingIOError):
        manager.recv(4096)
    silent = Notifier(ServiceEnvironment())
    assert not silent.active
    silent.ready("nobody listens")  # does nothing, raises nothing


def test_the_abstract_namespace_is_understood() -> None:
    name = f"robotlab-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(2)
        Notifier(ServiceEnvironment(notify_socket=f"@{name}")).ready("up")
        assert sock.recv(4096) == b"READY=1\nSTATUS=up"


def test_a_manager_that_went_away_is_warned_about_once_and_never_raised(
        tmp_path: Path, caplog) -> None:
    notifier = Notifier(ServiceEnvironment(notify_socket=str(tmp_path / "gone")))
    with caplog.at_level(logging.WARNING, logger="robotlab.service"):
        notifier.ready("up")
        notifier.status("still up")
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        f"cannot notify the service manager at {tmp_path / 'gone'}"]


def test_the_environment_is_read_as_systemd_sets_it() -> None:
    env = {"NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "20000000",
           "WATCHDOG_PID": "42"}
    assert service_environment(env, pid=42) == ServiceEnvironment("/run/systemd/notify", 20.0)
    # A watchdog meant for another process (inherited from a parent) is not ours to feed.
    assert service_environment(env, pid=43).watchdog_seconds is None
    assert service_environment({}, pid=1) == ServiceEnvironment()


def test_json_log_lines_are_one_object_each() -> None:
    record = logging.LogRecord("robotlab.broker", logging.INFO, __file__, 1, "peer %s joined",
                               ("bob",), None)
    entry = json.loads(JsonFormatter().format(record))
    assert (entry["level"], entry["logger"],
            entry["message"]) == ("INFO", "robotlab.broker", "peer bob joined")
    assert entry["time"].endswith("+00:00") and entry["pid"] == os.getpid()


def test_bad_log_settings_are_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="--log-format must be one of text, json, got 'xml'"):
        configure_logging("INFO", "xml")
    with pytest.raises(ConfigError, match="--log-level must be"):
        configure_logging("LOUD", "text")
