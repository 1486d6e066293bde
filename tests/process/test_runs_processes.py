"""A robot's recent runs asked of it over the bus: ``robotlab runs NAME`` and the web console's
``/api/runs/NAME``, against a real broker and a robotd whose scripted model calls a tool."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from robotlab import bus
from robotlab.robot.requests import RUN_TYPE
from robotlab.testing import serve_script
from tests.process.conftest import ROBOT_READY, Processes, is_live
from tests.process.test_observability_processes import CLOCK_TEMPLATE, TURNS
from tests.process.test_web_processes import SECONDS, web  # noqa: F401 (the fixture)

pytestmark = pytest.mark.process


def runs_cli(broker: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "robotlab.cli", "runs", "--broker", broker, *args],
                          capture_output=True, text=True, timeout=SECONDS)


@pytest.fixture
def clock(processes: Processes, broker: str, tmp_path: Path) -> Iterator[Callable[[], None]]:
    """robotd ``clock``: a template with the clock tool, a scripted model that calls it once; call
    the fixture to have it run once (what time is it in Oslo?)."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "clock.md").write_text(CLOCK_TEMPLATE)
    with serve_script(TURNS) as api:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", "clock", "--broker", broker,
                "--prompts-dir", str(tmp_path / "prompts"), "--template", "clock",
                "--model", "openai/scripted", "--api-base", api, "--serve"]
        processes.keep(argv, lambda proc: is_live(broker, "clock", proc), name="robotd-clock",
                       timeout=ROBOT_READY)

        def run_once() -> None:
            asked = {"message": "What time is it in Oslo?", "kwargs": {"tools": "inherit"}}
            with bus.connect(broker, name="test-ask", timeout=5) as client:
                reply = client.request("clock", asked, type=RUN_TYPE, timeout=SECONDS).content
            assert reply["reply"] == "It is 12:00 in Oslo.", reply

        yield run_once


def test_runs_shows_the_prompt_the_tool_call_and_the_final_words(clock, broker: str) -> None:
    before = runs_cli(broker, "clock")
    clock()
    shown = runs_cli(broker, "clock")
    as_json = runs_cli(broker, "clock", "--json")

    assert before.returncode == 0, before.stderr
    assert "clock has not run since its robotd started" in before.stderr, before.stderr
    assert shown.returncode == 0, shown.stderr
    assert "  prompt: What time is it in Oslo?" in shown.stdout
    assert '  tool clock({"city": "Oslo"}) -> 12:00 in Oslo' in shown.stdout
    assert "  reply: It is 12:00 in Oslo." in shown.stdout
    assert " done " in shown.stdout and "80 in / 16 out tokens  unknown" in shown.stdout
    [run] = json.loads(as_json.stdout)
    assert (run["status"], run["prompt"], run["reply"]) == (
        "done", "What time is it in Oslo?", "It is 12:00 in Oslo.")
    assert run["tool_calls"] == [
        {"name": "clock", "arguments": '{"city": "Oslo"}', "result": "12:00 in Oslo"}]
    assert (run["tokens_in"], run["tokens_out"], run["cost"]) == (80, 16, "unknown")
    assert run["seconds"] >= 0 and run["error"] is None


@pytest.mark.parametrize(("who", "code", "line"), [
    ("nobody", 69, ": no robot named 'nobody' is on the bus at "),
    ("fixture-client", 69, ": 'fixture-client' is a client, not a robot: only robots keep runs"),
    ("echo", 69, ": echo keeps no record of its runs"),
    ("two words", 64, "Invalid value for 'NAME'"),
])
def test_an_unknown_absent_or_runless_member_is_one_line(start_robotd, broker: str, who: str,
                                                         code: int, line: str) -> None:
    start_robotd("echo")  # a handler robotd: it hosts a function, not a robot
    with bus.connect(broker, name="fixture-client", timeout=5):
        done = runs_cli(broker, who)
    assert done.returncode == code, done.stderr
    assert line in done.stderr and "Traceback" not in done.stderr


def test_the_console_reads_a_robots_runs(clock, web, broker: str) -> None:  # noqa: F811
    url, _ = web()
    clock()
    answer = httpx.get(f"{url}api/runs/clock", timeout=SECONDS)
    missing = httpx.get(f"{url}api/runs/nobody", timeout=SECONDS)

    assert answer.status_code == 200, answer.text
    [run] = answer.json()["runs"]
    assert run["tool_calls"][0]["name"] == "clock" and run["reply"] == "It is 12:00 in Oslo."
    assert missing.status_code == 404 and "no robot named 'nobody'" in missing.json()["error"]
