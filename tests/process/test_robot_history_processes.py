"""A robotd's conversation log on disk: readable after kill -9, closed by a graceful stop.

The hosted robot is ``robotd --serve --history-file PATH`` with the script server as its model;
a slow scripted turn (``delay``) keeps a run open while the test signals the daemon.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from robotlab import Robot, bus
from robotlab.history.log import HistoryLog
from robotlab.testing import ScriptedLLM, requests_seen, serve_script
from tests.process.conftest import ROBOT_READY, Proc, Processes, is_live
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def start_robot(processes: Processes, broker: str, api: str, history: Path) -> Proc:
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker", broker,
            "--system-prompt", "You answer briefly.", "--model", "openai/scripted", "--api-base",
            api, "--serve", "--history-file", str(history)]
    return processes.keep(argv, lambda proc: is_live(broker, "bob", proc), name="robotd-bob",
                          timeout=ROBOT_READY)


def entries(path: Path) -> list[dict[str, Any]]:
    """The entries on disk (the header line left out)."""
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    except (OSError, ValueError):
        return []


def task_started(path: Path, text: str) -> bool:
    return any(e["kind"] == "task" and e["content"] == text for e in entries(path))


def test_kill_9_mid_run_leaves_a_readable_history_that_reloads(processes: Processes, broker: str,
                                                                tmp_path: Path) -> None:
    history = tmp_path / "bob.json"
    with serve_script([{"content": "first"}, {"content": "never sent", "delay": 30}]) as api:
        bob = start_robot(processes, broker, api, history)
        with bus.connect(broker, name="alice") as alice:
            assert alice.request("bob", "one", timeout=30).content == "first"
            alice.send_request("bob", "two")
            wait_until(lambda: task_started(history, "two"), timeout=15,
                       message="run two is on disk")
            bob.popen.send_signal(signal.SIGKILL)
            assert bob.popen.wait(10) == -signal.SIGKILL
    saved = entries(history)
    assert [e["kind"] for e in saved] == ["system", "task", "reply", "exit", "task"]
    assert saved[-1]["run"] == 2
    reloaded = HistoryLog.load(history)
    assert reloaded.entries[-1].status == "interrupted"  # type: ignore[attr-defined]
    robot = Robot(llm=ScriptedLLM([]), history_path=history)
    assert robot.messages == [{"role": "system", "content": "You answer briefly."},
                              {"role": "user", "content": "one"},
                              {"role": "assistant", "content": "first"}]


def test_sigterm_finishes_the_run_and_the_history_holds_its_exit(processes: Processes, broker: str,
                                                                  tmp_path: Path) -> None:
    history = tmp_path / "bob.json"
    Robot(llm=ScriptedLLM([{"content": "earlier answer"}]),
          history_path=history).run("earlier question")
    with serve_script([{"content": "slow answer", "delay": 1.5}]) as api:
        bob = start_robot(processes, broker, api, history)
        with bus.connect(broker, name="alice") as alice:
            tracker = alice.send_request("bob", "two")
            wait_until(lambda: task_started(history, "two"), timeout=15,
                       message="run two is on disk")
            bob.popen.send_signal(signal.SIGTERM)
            assert tracker.reply(30).content == "slow answer"
        assert bob.popen.wait(15) == 0
        [request] = requests_seen(api)
    assert [m["content"] for m in request["messages"]] == [
        "You answer briefly.", "earlier question", "earlier answer", "two"]
    last = entries(history)[-1]
    assert (last["kind"], last["status"], last["reply"],
            last["run"]) == ("exit", "completed", "slow answer", 2)
