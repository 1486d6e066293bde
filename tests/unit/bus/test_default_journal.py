"""Where a broker keeps its journal when not told: one per bind address, or the systemd unit's."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cli.robotlab_cli import _default_journal
from robotlab.bus.config import default_journal


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return tmp_path / "robotlab"


def test_brokers_on_one_host_get_a_journal_each(state: Path) -> None:
    paths = {bind: default_journal(bind) for bind in
             ("tcp://127.0.0.1:5555", "tcp://127.0.0.1:5556", "ipc:///tmp/crew.sock",
              "tcp://[::1]:5555")}

    assert paths["tcp://127.0.0.1:5555"] == str(state / "broker-tcp-127.0.0.1-5555.db")
    assert paths["ipc:///tmp/crew.sock"] == str(state / "broker-ipc-tmp-crew.sock.db")
    assert len(set(paths.values())) == len(paths)


def test_under_systemd_the_units_state_directory_holds_broker_db(
        state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", f"{tmp_path}/unit:{tmp_path}/other")

    assert default_journal("tcp://127.0.0.1:5555") == f"{tmp_path}/unit/broker.db"


def test_the_journal_brokers_once_shared_is_named_at_start_not_read(
        state: Path, caplog: pytest.LogCaptureFixture) -> None:
    state.mkdir()
    (state / "broker.db").write_bytes(b"")

    with caplog.at_level(logging.WARNING, logger="robotlab.broker"):
        path = _default_journal("tcp://127.0.0.1:5555")

    assert path == str(state / "broker-tcp-127.0.0.1-5555.db")
    (line,) = caplog.messages
    assert f"--journal {state / 'broker.db'}" in line
