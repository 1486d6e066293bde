"""``robotlab a2a-serve`` against a broker run with CURVE keys: the same identity rules as every
member. With an authorized admin key it serves the keyed crew; with a key the broker does not
know it stops with one line."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import anyio
import pytest
from a2a.helpers import get_artifact_text
from a2a.types import TaskState
from click.testing import CliRunner

from robotlab.cli.robotlab_cli import main
from tests.process import test_a2a_serve_processes as served
from tests.process import test_mcp_serve_keys as keyed
from tests.process.conftest import Processes

SECONDS, a2a_serve_argv, events = served.SECONDS, served.a2a_serve_argv, served.events
keys_dir, keyed_crew = keyed.keys_dir, keyed.keyed_crew  # the fixtures: keys, a keyed broker

pytestmark = pytest.mark.process


def test_with_an_authorized_key_the_keyed_crew_is_served(processes: Processes, keyed_crew: str,
                                                          keys_dir: Path) -> None:
    argv = a2a_serve_argv(keyed_crew, "--http", "127.0.0.1:0", "--keys", str(keys_dir), "--key",
                          str(keys_dir / "crew.key_secret"))
    proc = processes.keep(argv, lambda proc: "serving A2A agents at" in proc.output(),
                          name="a2a-serve", timeout=SECONDS)
    found = re.search(r"serving A2A agents at (http://\S+)", proc.output())
    assert found, proc.output()

    async def scenario() -> None:
        [sent] = await events(f"{found.group(1)}/bob/", "through the keys", streaming=False)
        assert sent.task.status.state == TaskState.TASK_STATE_COMPLETED
        assert get_artifact_text(sent.task.artifacts[0]).startswith("through the keys (from ")

    anyio.run(scenario)


def test_with_a_key_the_broker_does_not_know_it_stops_with_one_line(keyed_crew: str, keys_dir: Path,
                                                                    tmp_path: Path) -> None:
    stranger = tmp_path / "stranger"
    assert CliRunner().invoke(main, ["keys", "new", "crew", "--robot", "*", "--role", "admin",
                                     "--dir", str(stranger)]).exit_code == 0
    argv = a2a_serve_argv(keyed_crew, "--http", "127.0.0.1:0", "--keys", str(keys_dir), "--key",
                          str(stranger / "crew.key_secret"))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=SECONDS)
    assert done.returncode == 69, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "the broker refused this client's CURVE key" in last and "Traceback" not in done.stderr
