"""A served robot whose model needs a key the environment lacks: robotd says so as it starts.

The robotd runs with the provider's key variables removed from its environment; its model is
an OpenAI model, so the variable to name is ``OPENAI_API_KEY``. No model server is reached:
without a key litellm refuses the call itself.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from robotlab import Robot
from robotlab.errors import Nacked
from robotlab.testing import serve_script
from tests.process.conftest import ROBOT_READY, Proc, Processes, is_live
from tests.waiting import wait_until

pytestmark = pytest.mark.process

WARNING = "OPENAI_API_KEY, which is not set"


@pytest.fixture
def keyless(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's environment (and so each robotd's) without any OpenAI key."""
    for name in ("OPENAI_API_KEY", "AZURE_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def start_served(processes: Processes, broker: str, name: str, *model: str) -> tuple[Proc, Path]:
    """``robotd --serve`` with its stderr in a file of its own (returned beside the process)."""
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", name, "--broker", broker,
            "--system-prompt", "You answer briefly.", *model, "--serve"]
    stderr = processes.tmp / f"{name}.stderr"
    with open(stderr, "wb") as err, open(processes.tmp / f"{name}.stdout", "wb") as out:
        popen = subprocess.Popen(argv, stdout=out, stderr=err, start_new_session=True)
    proc = Proc(argv, {}, popen, stderr)
    processes.started.append(proc)  # stopped at teardown
    wait_until(lambda: is_live(broker, name, proc) or popen.poll() is not None, timeout=ROBOT_READY,
               message=f"{name} on the bus")
    assert popen.poll() is None, stderr.read_text()
    return proc, stderr


@pytest.fixture
def alice(broker: str) -> Iterator[Robot]:
    robot = Robot(name="alice", bus=broker, model="openai/scripted")
    yield robot
    robot.leave_bus()


@pytest.mark.usefixtures("keyless")
def test_a_missing_key_is_named_at_start_and_in_each_nack(processes: Processes, broker: str,
                                                          alice: Robot) -> None:
    _, stderr = start_served(processes, broker, "bob", "--model", "openai/gpt-4o-mini")

    def warnings() -> list[str]:
        return [line for line in stderr.read_text().splitlines() if "WARNING" in line
                and WARNING in line]

    # The warning comes once the model client has loaded, which goes on after the robot joined.
    wait_until(warnings, timeout=ROBOT_READY, message="the warning naming OPENAI_API_KEY")
    sent = alice.send_message(to="bob", content="work")
    with pytest.raises(Nacked) as caught:
        alice.outbox[sent.key]["delivery"].wait(30)
    assert "set OPENAI_API_KEY" in str(caught.value)
    assert len(warnings()) == 1, stderr.read_text()


@pytest.mark.usefixtures("keyless")
def test_a_model_on_a_local_server_needs_no_key_and_gets_no_warning(processes: Processes,
                                                                    broker: str,
                                                                     alice: Robot) -> None:
    with serve_script([{"content": "pong"}]) as api:
        _, stderr = start_served(processes, broker, "bob", "--model", "openai/scripted",
                                 "--api-base", api)
        assert alice.ask("bob", "ping", timeout=30).content == "pong"
    assert "API_KEY" not in stderr.read_text()
