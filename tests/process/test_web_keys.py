"""``robotlab web`` against a broker run with CURVE keys: the same identity rules as every member.
The console reads the crew with an admin key; her desk joins with her own key, which may use
only her name."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from robotlab import bus
from robotlab.bus.keys import client_keys
from robotlab.cli.robotlab_cli import main
from robotlab.robot.human import ask_human
from tests.process import test_mcp_serve_keys as keyed
from tests.process import test_web_processes as served
from tests.process.conftest import Processes
from tests.waiting import wait_until

SECONDS, view, web_argv = served.SECONDS, served.view, served.web_argv
keys_dir, keyed_crew = keyed.keys_dir, keyed.keyed_crew  # the fixtures: keys, a keyed broker

pytestmark = pytest.mark.process


def new_key(folder: Path, name: str, robot: str) -> None:
    result = CliRunner().invoke(main, ["keys", "new", name, "--robot", robot, "--dir",
                                       str(folder)])
    assert result.exit_code == 0, result.output


@pytest.fixture
def her_key(keys_dir: Path, request: pytest.FixtureRequest) -> None:
    """alice's key, for the name the test's parameter gives (made before the broker reads the
    authorized keys)."""
    new_key(keys_dir, "alice", request.param)


@pytest.mark.parametrize("her_key", ["alice"], indirect=True)
def test_with_an_admin_key_and_her_own_the_crew_and_her_desk_are_served(
        processes: Processes, her_key: None, keyed_crew: str, keys_dir: Path) -> None:
    argv = web_argv(keyed_crew, "--bind", "127.0.0.1:0", "--keys", str(keys_dir), "--key",
                    str(keys_dir / "crew.key_secret"), "--human", "alice")
    proc = processes.keep(argv, lambda proc: "serving the web console at" in proc.output(),
                          name="web", timeout=SECONDS)
    found = re.search(r"serving the web console at (http://\S+)", proc.output())
    assert found, proc.output()
    url = found.group(1)
    members = {(row["name"], row["role"]) for row in view(url)["members"]}
    assert {("bob", "robot"), ("alice", "human")} <= members
    with bus.connect(keyed_crew, name="bob", keys=client_keys("bob", str(keys_dir), None),
                     timeout=5) as bob:
        answer = ask_human(bob, "alice", "Ship it?", timeout=SECONDS, default="no")
        [asked] = wait_until(lambda: view(url)["desk"]["open"], timeout=SECONDS,
                             message="bob's question on her desk")
        httpx.post(url + "api/desk/answer", json={"number": asked["number"], "text": "ship"},
                   timeout=SECONDS)
        assert answer.result(SECONDS) == "ship"


@pytest.mark.parametrize("her_key", ["carol"], indirect=True)  # alice's file, carol's name
def test_her_key_for_another_name_is_refused_with_one_line(her_key: None, keyed_crew: str,
                                                           keys_dir: Path) -> None:
    argv = web_argv(keyed_crew, "--bind", "127.0.0.1:0", "--keys", str(keys_dir), "--key",
                    str(keys_dir / "crew.key_secret"), "--human", "alice")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=SECONDS)
    assert done.returncode == 78, done.stderr
    assert "alice" in done.stderr.strip().splitlines()[-1] and "Traceback" not in done.stderr
